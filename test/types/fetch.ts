// sluice's framework-free entry as a TypeScript Worker uses it: createLimiter in a plain fetch
// handler, its decisions and responses, and the mistakes the types must refuse.
import {
  apiKey,
  compose,
  createLimiter,
  firstOf,
  ip,
  route,
  SluiceConfigError,
  user,
  type BypassedDecision,
  type CheckedDecision,
  type Decision,
  type KeyHelper,
  type Limiter,
  type LimiterOptions,
  type NormalizedRule,
  type RateLimitDecision,
} from "sluice";
import type { Equal, Expect } from "./assert.js";

interface Env {
  SLUICE_DO: DurableObjectNamespace;
  SLUICE_KV: KVNamespace;
  ENV: "production" | "dev";
  TENANT_HEADER: string;
}

// README.md's plain fetch handler, typed.
const limiter = createLimiter<Env>({ key: ip(), limit: 10, windowSec: 60 });

export default {
  async fetch(request, env, ctx) {
    const decision = await limiter.limit(request, env, ctx);
    if (!decision.allowed) return limiter.limitedResponse(decision);
    return limiter.withHeaders(new Response("ok"), decision);
  },
} satisfies ExportedHandler<Env>;

// peek, get and reset, for tests and admin tools.
async function admin(request: Request, env: Env): Promise<number> {
  const peeked: RateLimitDecision = await limiter.peek(request, env);
  const counters: CheckedDecision = await limiter.get(request, env);
  await limiter.reset(request, env);
  // @ts-expect-error reset answers nothing
  const nothing: number = await limiter.reset(request, env);
  return peeked.allowed ? counters.remaining : 0;
}
void admin;

// Decisions: checked, bypassed or skipped, told apart by their flags.
async function inspect(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const decision = await limiter.limit(request, env, ctx);
  type _union = Expect<Equal<typeof decision, RateLimitDecision>>;
  const headerPairs: Array<[string, string]> = limiter.headers(decision);
  if (decision.bypassed || decision.skipped) {
    const rules: readonly NormalizedRule[] = decision.rules;
    return new Response(`not limited by ${rules.length} rules`, { headers: headerPairs });
  }
  type _checked = Expect<Equal<typeof decision, CheckedDecision>>;
  const deciding: Decision | null = decision.checks[decision.decidingCheck];
  const never: boolean = decision.retryAfterMs === Infinity;
  const preFiltered: true | undefined = decision.preFiltered;
  const reason: string | undefined = decision.fallback?.reason;
  const ruleIds: string[] = decision.rules.map((rule) => rule.id);
  if (!decision.allowed) return limiter.limitedResponse(decision);
  // @ts-expect-error the decision's own fields are not to be written
  decision.keys = [];
  // @ts-expect-error nothing called `remainingMs`: remaining counts requests, resetMs is the time
  decision.remainingMs;
  return Response.json({ deciding, never, preFiltered, reason, ruleIds });
}

// Key, cost and skip functions receive (request, env, ctx), typed by the limiter's Env.
const tenantLimiter: Limiter<Env> = createLimiter<Env>({
  key: (request, env) => request.headers.get(env.TENANT_HEADER),
  cost: async (request) => (request.method === "POST" ? 2 : 1),
  skip: (request, env) => env.ENV === "dev" && new URL(request.url).pathname === "/health",
  limit: 1_000,
  windowMs: 60_000,
  algorithm: "sliding-log",
  keyCapacity: 1_000,
});

// Key helpers composed; a user() of the fetch arguments.
const byUser = user((request: Request) => request.headers.get("x-user-id"));
const key: KeyHelper = ip({ trustForwardedFor: true });
const composed = createLimiter({ key: [apiKey(), route(), "static-part"], limit: 5, windowSec: 1 });
const either = createLimiter({ key: firstOf(byUser, key), limit: 5, windowSec: 1, name: "per-user" });
const composedFn = createLimiter({ key: compose(byUser, route("/v1/geo")), limit: 5, windowSec: 1 });

// Several rules, one all-or-nothing call; every rule, or the top level, has the key.
const tiers = createLimiter({
  key: ip(),
  algorithm: "token-bucket",
  rules: [
    { name: "per-second", rate: 5, burst: 10 },
    { name: "per-day", limit: 50_000, windowSec: 86_400, algorithm: "fixed-window" },
  ],
});
const ownKeys = createLimiter({
  rules: [
    { name: "ip", key: ip(), limit: 100, windowSec: 60 },
    { name: "user", key: byUser, limit: 20, windowSec: 60, cost: 2 },
  ],
});

// The stores, with their options.
const exact = createLimiter({ key: ip(), limit: 5, windowSec: 60, store: "durable", shards: 4, fallback: ["memory"], timeoutMs: 100 });
const global = createLimiter({ key: ip(), limit: 100, windowSec: 60, store: "kv", bindings: { kv: "RATE_KV" }, preFilter: false });

try {
  createLimiter({ key: ip(), limit: 10, windowSec: 60, algorithm: "gcra", burst: 0 });
} catch (error) {
  if (error instanceof SluiceConfigError) console.error(error.field, error.problem);
}

// What the types refuse.
const options: LimiterOptions<Env> = { key: ip(), limit: 10, windowSec: 60 };
// @ts-expect-error an unknown algorithm
createLimiter({ ...options, algorithm: "fixed_window" });
// @ts-expect-error a key is required
createLimiter({ limit: 10, windowSec: 60 });
// @ts-expect-error with rules, a rule without a key needs one at the top level
createLimiter({ rules: [{ name: "a", key: ip(), limit: 1, windowSec: 1 }, { name: "b", limit: 1, windowSec: 1 }] });
// @ts-expect-error a limit is required (or, for the buckets, a rate)
createLimiter({ key: ip(), windowSec: 60 });
// @ts-expect-error a window is required
createLimiter({ key: ip(), limit: 10 });
// @ts-expect-error windowSec and windowMs exclude each other
createLimiter({ key: ip(), limit: 10, windowSec: 60, windowMs: 60_000 });
// @ts-expect-error rate replaces limit and window
createLimiter({ key: ip(), algorithm: "token-bucket", rate: 2, limit: 10, windowSec: 60 });
// @ts-expect-error with rules, limits belong inside the rules
createLimiter({ key: ip(), limit: 10, rules: [{ limit: 1, windowSec: 1 }] });
// @ts-expect-error windowSec is a number of seconds
createLimiter({ key: ip(), limit: 10, windowSec: "60s" });
// @ts-expect-error the key function gets a Request, which has no `ip`
createLimiter({ key: (request) => request.ip, limit: 10, windowSec: 60 });
// @ts-expect-error bypass is false or { variable, value }
createLimiter({ ...options, bypass: true });
// @ts-expect-error limit() takes the Request
limiter.limit("https://example.com/");
declare const bypassed: BypassedDecision;
// @ts-expect-error a bypassed (or skipped) decision has no 429
limiter.limitedResponse(bypassed);

export { composed, composedFn, either, exact, global, inspect, ownKeys, tenantLimiter, tiers };
