// sluice/hono as a TypeScript Worker uses it: the middleware, its options, c.get("rateLimit") typed
// through Hono's ContextVariableMap, and the mistakes the types must refuse.
import { Hono } from "hono";
import type { Context } from "hono";
import {
  apiKey,
  compose,
  firstOf,
  ip,
  rateLimit,
  route,
  SluiceConfigError,
  user,
  type BypassedDecision,
  type CheckedDecision,
  type HeaderMode,
  type KeyFunction,
  type MiddlewareDecision,
  type RateLimitDecision,
  type RateLimitOptions,
  type RuleOptions,
} from "sluice/hono";
import type { Expect, Equal } from "./assert.js";

// The application's own context variables, set by its authentication middleware.
declare module "hono" {
  interface ContextVariableMap {
    userId: string;
  }
}

interface Bindings {
  SLUICE_DO: DurableObjectNamespace;
  SLUICE_KV: KVNamespace;
  ENV: string;
}
type AppEnv = { Bindings: Bindings; Variables: { tenant: string } };

const app = new Hono<AppEnv>();

// The three-line middleware.
app.use("/api/*", rateLimit({ key: ip(), limit: 120, windowSec: 60 }));

// The decision, typed through ContextVariableMap; `store` and `checks` say who decided what. It is
// undefined where no rate-limit middleware set one (a route without it, a request `skip` let through).
app.get("/api/hello", (c) => {
  const decision = c.get("rateLimit");
  type _decision = Expect<Equal<typeof decision, MiddlewareDecision | undefined>>;
  type _named = Expect<Equal<MiddlewareDecision, CheckedDecision | BypassedDecision>>;
  // @ts-expect-error the decision may be absent: read it only after checking
  decision.allowed;
  // @ts-expect-error the decision may be absent
  const absentRemaining: number | undefined = decision.remaining;
  if (decision === undefined) return c.text("not limited here");
  if (decision.bypassed) {
    const bypassed: true = decision.allowed;
    return c.json({ bypassed });
  }
  const remaining: number = decision.remaining;
  const retryAfterMs: number = decision.retryAfterMs;
  const store: "memory" | "durable" | "kv" | "redis" | "none" = decision.store;
  const from: "durable" | "kv" | "redis" | undefined = decision.fallback?.from;
  const consulted: Array<number | null> = decision.checks.map((check) => (check === null ? null : check.remaining));
  const names: string[] = decision.rules.map((rule) => rule.name);
  const firstKey: string = decision.keys[0];
  // @ts-expect-error rules are the limiter's own, normalized and frozen
  decision.rules.push(decision.rules[0]);
  // @ts-expect-error the time fields carry their unit: retryAfterMs, not retryAfter
  decision.retryAfter;
  // @ts-expect-error and resetMs, not reset
  decision.reset;
  return c.json({ remaining, retryAfterMs, store, from, consulted, names, firstKey });
});

// Key helpers composed: an array, compose(), firstOf(), user() of the context, apiKey(), route().
const perUser = firstOf(
  user((c: Context<AppEnv>) => c.get("tenant")),
  ip({ trustForwardedFor: false, ipv6Prefix: 56 }),
);
app.get("/data", rateLimit({ name: "data", key: [ip(), route()], algorithm: "fixed-window", limit: 5, windowSec: 60 }), (c) => c.text("ok"));
app.get("/geo", rateLimit({ key: compose(apiKey("x-api-key"), route("/v1/geo")), limit: 10, windowMs: 1500 }), (c) => c.text("ok"));
app.use("/tenant/*", rateLimit<AppEnv>({ key: perUser, limit: 100, windowSec: 60 }));
// A key function of the context, async, reading the app's own bindings and variables.
app.use(
  "/async/*",
  rateLimit<AppEnv>({
    key: async (c) => `${c.env.ENV}:${c.get("tenant")}`,
    limit: 10,
    windowSec: 1,
  }),
);
const fixedKey: KeyFunction = compose("tenant-a", ip());
// @ts-expect-error the context is the app's: it has no variable "nope"
rateLimit<AppEnv>({ key: (c) => c.get("nope"), limit: 10, windowSec: 1 });

// Several rules in one all-or-nothing call: they inherit key, algorithm, cost and keyCapacity.
const rules: RuleOptions<[c: Context<AppEnv>]>[] = [
  { name: "burst", limit: 10, windowSec: 1 },
  { name: "sustained", algorithm: "token-bucket", rate: 2.5, burst: 20 },
  { name: "daily", algorithm: "gcra", limit: 10_000, windowSec: 86_400, keyCapacity: 10_000 },
];
app.use("/multi/*", rateLimit<AppEnv>({ key: ip(), cost: (c) => (c.req.method === "POST" ? 5 : 1), rules }));

// store: "durable" with its options.
app.post(
  "/checkout",
  rateLimit({
    key: user((c) => c.get("userId")),
    limit: 5,
    windowSec: 60,
    store: "durable",
    bindings: { durable: "SLUICE_DO", kv: "SLUICE_KV" },
    shards: 8,
    fallback: ["kv", "memory"],
    failMode: "closed",
    timeoutMs: 80,
    breaker: { failures: 5, cooldownMs: 10_000 },
    preFilter: true,
    logIntervalMs: 60_000,
  }),
  (c) => c.json({ decidedBy: c.get("rateLimit")?.bypassed ? "bypass" : c.get("rateLimit")?.store }),
);
app.use("/per-key/*", rateLimit({ key: ip(), limit: 5, windowSec: 60, store: "durable", shards: "key", fallback: [] }));
app.use("/kv/*", rateLimit({ key: ip(), limit: 100, windowSec: 60, store: "kv", fallback: ["memory"], failMode: "open" }));

// Every other option of the middleware.
const headerModes: HeaderMode[] = ["legacy", "draft", "both", "none"];
const options: RateLimitOptions<AppEnv> = {
  key: ip(),
  limit: 10,
  windowSec: 60,
  code: "slow_down",
  headers: headerModes[0],
  problemJson: true,
  skip: (c) => c.req.header("x-internal") === "1",
  onLimited: (c, decision) => c.json({ retryInMs: decision.retryAfterMs, remaining: decision.remaining }, 429),
  bypass: { variable: "STAGE", value: "local" },
  clock: () => 1_700_000_000_000,
  keyCapacity: 20_000,
};
app.use("/custom/*", rateLimit(options));
app.use("/quiet/*", rateLimit({ key: ip(), limit: 10, windowSec: 60, bypass: false, headers: "none", onLimited: () => undefined }));

// A skipped request is not set on the context: the union the middleware sets leaves it out.
type _contextValue = Expect<Equal<Exclude<RateLimitDecision, CheckedDecision | BypassedDecision>["skipped"], true>>;

// Configuration errors throw at construction, naming the field.
try {
  rateLimit({ key: ip(), limit: 0, windowSec: 60 });
} catch (error) {
  if (error instanceof SluiceConfigError) {
    const field: string = error.field;
    const problem: string = error.problem;
    const name: "SluiceConfigError" = error.name;
    console.log(field, problem, name);
  }
}

// A limit per plan, shadow mode and a rollout; the middleware's handle (peek, get, reset).
const plans = { free: 10, pro: 100 } as const;
const perPlan = rateLimit<AppEnv>({
  key: ip(),
  limit: async (c: Context<AppEnv>) => plans[c.req.header("x-plan") === "pro" ? "pro" : "free"],
  windowSec: 60,
  mode: "shadow",
});
app.use("/plans/*", perPlan);
app.use("/rollout/*", rateLimit({ key: ip(), limit: 10, windowSec: 60, rollout: 0.25 }));
app.post("/admin/reset", async (c) => {
  const peeked = await perPlan.peek(c);
  type _peeked = Expect<Equal<typeof peeked, RateLimitDecision>>;
  const counters: CheckedDecision = await perPlan.get(c);
  const mode: "enforce" | "shadow" = counters.mode;
  const wouldDeny: boolean = counters.wouldDeny;
  const done: void = await perPlan.reset(c);
  return c.json({ mode, wouldDeny, done });
});

// What the types refuse.
// @ts-expect-error a limit function returns a number
rateLimit({ key: ip(), limit: () => "10", windowSec: 60 });
// @ts-expect-error mode is "enforce" or "shadow" (the gateway's "bypass" is not a middleware mode)
rateLimit({ key: ip(), limit: 10, windowSec: 60, mode: "bypass" });
// @ts-expect-error rollout is a share from 0 to 1, a number
rateLimit({ key: ip(), limit: 10, windowSec: 60, rollout: "50%" });
// @ts-expect-error an unknown algorithm
rateLimit({ key: ip(), limit: 10, windowSec: 60, algorithm: "sliding-window" });
// @ts-expect-error a key is required
rateLimit({ limit: 10, windowSec: 60 });
// @ts-expect-error limit is a number, not a string
rateLimit({ key: ip(), limit: "10", windowSec: 60 });
// @ts-expect-error an unknown store
rateLimit({ key: ip(), limit: 10, windowSec: 60, store: "memcached" });
rateLimit({ key: ip(), limit: 10, windowSec: 60, store: "redis", bindings: { redisUrl: "MY_REDIS_URL", redisToken: "MY_REDIS_TOKEN" } });
// @ts-expect-error shards apply to store "durable" only
rateLimit({ key: ip(), limit: 10, windowSec: 60, store: "redis", shards: 4 });
// @ts-expect-error shards is a number or "key"
rateLimit({ key: ip(), limit: 10, windowSec: 60, store: "durable", shards: "8" });
// @ts-expect-error fallback names stores, and "durable" is never a fallback
rateLimit({ key: ip(), limit: 10, windowSec: 60, store: "kv", fallback: ["durable"] });
// @ts-expect-error failMode is "open" or "closed"
rateLimit({ key: ip(), limit: 10, windowSec: 60, store: "durable", failMode: "deny" });
// @ts-expect-error an unknown option (the runtime refuses it too)
rateLimit({ key: ip(), limit: 10, windowSec: 60, windowsec: 60 });
// @ts-expect-error an unknown header mode
rateLimit({ key: ip(), limit: 10, windowSec: 60, headers: "all" });
// @ts-expect-error a cost function returns a number
rateLimit({ key: ip(), limit: 10, windowSec: 60, cost: () => "2" });
// @ts-expect-error ip() takes options, not a header name
ip("cf-connecting-ip");
// @ts-expect-error user() needs the function that names the user
user();
// @ts-expect-error onLimited returns a Response (or undefined for the default 429)
rateLimit({ key: ip(), limit: 10, windowSec: 60, onLimited: () => "denied" });

export { app, fixedKey };
