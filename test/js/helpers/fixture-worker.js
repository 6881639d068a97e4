// The Worker the tests drive through workerd: the demo API and one small app per behaviour, all on a
// clock the tests set (POST /__test/clock), plus test-only routes that reach the isolate's test hooks,
// the test Durable Object's knobs and a KV fault. Nothing here ships: the demo Worker
// (worker/index.js) imports none of it.
import { Hono } from "hono";

import { createDemoApp } from "../../../worker/demo/demo.js";
import { apiKey, compose, firstOf, ip, rateLimit, route, user } from "../../../worker/src/hono.js";
import { isolateTestHooks } from "../../../worker/src/engine/isolate.js";
import { createLimiter, isolateStats, storeStats } from "../../../worker/src/sluice.js";
import { kvStore } from "../../../worker/src/stores/kinds/kv.js";
import { faultyKv, setKvFault } from "../fixtures/faulty-kv.js";

// Bound as SLUICE_DO where a test binds the stores (storeBindings in worker.js); FailingDurableObject
// where a test needs a Durable Object that is bound but down (worker-demo.test.js's degraded demo).
export { FailingDurableObject, TestSluiceDurableObject } from "../fixtures/durable-object.js";

let now = Date.UTC(2030, 0, 1);
const clock = () => now;

const app = new Hono();

app.post("/__test/clock", async (c) => {
  now = (await c.req.json()).now;
  return c.json({ now });
});
app.get("/__test/stats", (c) => c.json(isolateStats()));
app.get("/__test/store-stats", (c) => c.json(storeStats()));
// Calls a method of the Durable Object named `name` (its knobs: setKnob("clock" | "fault", value)).
app.post("/__test/object", async (c) => {
  const { name, method, args = [] } = await c.req.json();
  const stub = c.env.SLUICE_DO.get(c.env.SLUICE_DO.idFromName(name));
  return c.json({ result: (await stub[method](...args)) ?? null });
});
app.post("/__test/kv-fault", async (c) => {
  setKvFault((await c.req.json()).fault);
  return c.json({ ok: true });
});
app.post("/__test/trap", (c) => {
  isolateTestHooks.trapOnNextCheck();
  return c.json({ armed: true });
});
app.post("/__test/refuse", (c) => {
  isolateTestHooks.refuseNextCheck();
  return c.json({ armed: true });
});
app.post("/__test/exhaust", (c) => {
  isolateTestHooks.exhaustMemory();
  return c.json({ exhausted: true });
});

app.route("/demo", createDemoApp({ clock, storeTimeoutMs: 2000 }));

const ok = (c) => c.json({ ok: true, decision: c.get("rateLimit") ?? null });
const fixed = { algorithm: "fixed-window", clock };

// Keys.
app.get("/keys/ip", rateLimit({ name: "keys-ip", key: ip(), limit: 3, windowSec: 60, ...fixed }), ok);
app.get("/keys/forwarded", rateLimit({ name: "keys-forwarded", key: ip({ trustForwardedFor: true }), limit: 3, windowSec: 60, ...fixed }), ok);
app.get("/keys/ipv6-48", rateLimit({ name: "keys-ipv6-48", key: ip({ ipv6Prefix: 48 }), limit: 3, windowSec: 60, ...fixed }), ok);
app.get("/keys/api", rateLimit({ name: "keys-api", key: apiKey("x-api-key"), limit: 2, windowSec: 60, ...fixed }), ok);
app.get("/keys/route/:id", rateLimit({ name: "keys-route", key: compose(ip(), route()), limit: 2, windowSec: 60, ...fixed }), ok);
const asyncUser = (c) => Promise.resolve(c.req.header("x-user") || undefined);
app.get("/keys/user", rateLimit({ name: "keys-user", key: firstOf(user(asyncUser), ip()), limit: 2, windowSec: 60, ...fixed }), ok);

// Two middlewares with the same rule share its counters.
const shared = { name: "shared", key: ip(), limit: 4, windowSec: 60, ...fixed };
app.get("/shared/a", rateLimit(shared), ok);
app.get("/shared/b", rateLimit(shared), ok);

// Several rules in one all-or-nothing call.
app.get(
  "/multi",
  rateLimit({
    key: ip(),
    clock,
    rules: [
      { name: "short", limit: 2, windowSec: 10, algorithm: "fixed-window" },
      { name: "long", limit: 5, windowSec: 60, algorithm: "fixed-window" },
    ],
  }),
  ok,
);

// Header modes, bodies and custom responses.
for (const mode of ["legacy", "draft", "none"]) {
  app.get(`/headers/${mode}`, rateLimit({ name: `headers-${mode}`, key: ip(), limit: 1, windowSec: 60, headers: mode, ...fixed }), ok);
}
app.get("/problem", rateLimit({ name: "problem", key: ip(), limit: 1, windowSec: 60, problemJson: true, code: "SLOW_DOWN", ...fixed }), ok);
app.get(
  "/custom",
  rateLimit({
    name: "custom",
    key: ip(),
    limit: 1,
    windowSec: 60,
    ...fixed,
    onLimited: (c, decision) => c.text(`custom: retry in ${Math.ceil(decision.retryAfterMs / 1000)}s`, 503),
  }),
  ok,
);

// Buckets: Retry-After against t.
app.get("/bucket", rateLimit({ name: "bucket", key: ip(), algorithm: "token-bucket", limit: 6, windowSec: 60, burst: 3, clock }), ok);
app.get("/rate", rateLimit({ name: "rate", key: ip(), algorithm: "gcra", rate: 0.5, clock }), ok);

// Cost and skip.
app.get(
  "/cost",
  rateLimit({ name: "cost", key: ip(), limit: 10, windowSec: 60, ...fixed, cost: (c) => Number(c.req.header("x-cost") ?? 1) }),
  ok,
);
app.get(
  "/skip",
  rateLimit({ name: "skip", key: ip(), limit: 1, windowSec: 60, ...fixed, skip: (c) => c.req.header("x-internal") === "yes" }),
  ok,
);

// A custom bypass variable.
app.get("/bypass", rateLimit({ name: "bypass", key: ip(), limit: 1, windowSec: 60, ...fixed, bypass: { variable: "STAGE", value: "local" } }), ok);

// Stores through the middleware. Every route counts in the one Durable Object of shards: 1
// ("sluice/1/0"). A healthy object must decide even on a loaded machine: a generous timeout there,
// a short one only where the object is made to hang (3 s) and the timeout is what is tested.
const HEALTHY_TIMEOUT_MS = 2000;
const HANG_TIMEOUT_MS = 150;
const perIp = { key: ip(), limit: 5, windowSec: 60, clock };
// The last denied decision of each route whose 429 is the default one, for the tests to read.
const deniedDecisions = new Map();
const remember = (route) => (c, decision) => {
  deniedDecisions.set(route, decision);
  return undefined;
};
app.get("/__test/denied/:route", (c) => c.json(deniedDecisions.get(c.req.param("route")) ?? null));

app.get("/stores/memory", rateLimit({ name: "s-memory", ...perIp }), ok);
app.get("/stores/durable", rateLimit({ name: "s-durable", ...perIp, store: "durable", timeoutMs: HEALTHY_TIMEOUT_MS }), ok);
app.get("/stores/kv", rateLimit({ name: "s-kv", ...perIp, store: kvStore, timeoutMs: HEALTHY_TIMEOUT_MS }), ok);
app.get(
  "/stores/fallback",
  // The whole chain, asked for: KV, then the isolate's memory, then failMode "open" (the exact store's
  // default is no fallback and failMode "closed").
  rateLimit({ name: "s-fallback", ...perIp, store: "durable", fallback: ["kv", "memory"], failMode: "open", timeoutMs: HANG_TIMEOUT_MS, onLimited: remember("fallback") }),
  ok,
);
for (const failMode of ["open", "closed"]) {
  // Strict: no isolate memory, so when the object and KV both fail, failMode decides.
  app.get(
    `/stores/strict-${failMode}`,
    rateLimit({ name: `s-strict-${failMode}`, ...perIp, store: "durable", fallback: ["kv"], failMode, timeoutMs: HANG_TIMEOUT_MS, onLimited: remember(`strict-${failMode}`) }),
    ok,
  );
}
app.get(
  "/stores/prefilter",
  rateLimit({
    key: ip(),
    clock,
    store: "durable",
    timeoutMs: HEALTHY_TIMEOUT_MS,
    rules: [
      { name: "pf-short", limit: 2, windowSec: 60, algorithm: "fixed-window" },
      { name: "pf-long", limit: 10, windowSec: 3600, algorithm: "fixed-window" },
    ],
    onLimited: remember("prefilter"),
  }),
  ok,
);

// peek, get and reset through the middleware's handle, on the Durable Object (worker-api-durable.test.js).
// No pre-filter: an isolate that saw a key denied would deny it until its retry time, reset or not.
const durableApi = rateLimit({ name: "api-durable", key: ip(), limit: 3, windowSec: 60, store: "durable", timeoutMs: HEALTHY_TIMEOUT_MS, preFilter: false, ...fixed });
app.get("/api/durable", durableApi, ok);
app.get("/api/durable/peek", async (c) => c.json(await durableApi.peek(c)));
app.get("/api/durable/get", async (c) => c.json(await durableApi.get(c)));
app.post("/api/durable/reset", async (c) => {
  await durableApi.reset(c);
  return c.json({ reset: true });
});
// A durable store whose binding env lacks: the first request fails with a SluiceConfigError.
const unbound = createLimiter({ name: "api-unbound", key: ip(), limit: 3, windowSec: 60, store: "durable", bindings: { durable: "NOT_BOUND" }, ...fixed });
app.get("/api/unbound", async (c) => {
  try {
    return c.json(await unbound.limit(c.req.raw, c.env));
  } catch (error) {
    return c.json({ error: error.name, field: error.field, message: error.message }, 500);
  }
});

// Registered only when first requested: used to watch registration on a fresh or exhausted instance.
app.get("/late", rateLimit({ name: "late", key: ip(), limit: 2, windowSec: 60, ...fixed }), ok);

// A plain fetch handler with createLimiter: key functions receive (request, env, ctx).
const plain = createLimiter({
  name: "plain",
  key: compose(ip(), route(), (request, env) => `env:${env.ENV}`),
  limit: 2,
  windowSec: 60,
  ...fixed,
});

async function plainFetch(request, env, ctx) {
  const decision = await plain.limit(request, env, ctx);
  if (!decision.allowed) return plain.limitedResponse(decision);
  return plain.withHeaders(Response.json({ ok: true, keys: decision.keys ?? null }), decision);
}

export default {
  fetch(request, env, ctx) {
    // KV reached through a wrapper the tests can make fail (POST /__test/kv-fault).
    const storeEnv = env.SLUICE_KV === undefined ? env : { ...env, SLUICE_KV: faultyKv(env.SLUICE_KV) };
    if (new URL(request.url).pathname.startsWith("/plain/")) return plainFetch(request, storeEnv, ctx);
    return app.fetch(request, storeEnv, ctx);
  },
};
