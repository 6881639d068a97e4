// The Worker the tests drive through workerd: the demo API and one small app per behaviour, all on a
// clock the tests set (POST /__test/clock), plus test-only routes that reach the isolate's test hooks.
// Nothing here ships: the demo Worker (worker/src/index.js) imports none of it.
import { Hono } from "hono";

import { createDemoApp } from "../../../worker/src/demo.js";
import { apiKey, compose, firstOf, ip, rateLimit, route, user } from "../../../worker/src/hono.js";
import { isolateTestHooks } from "../../../worker/src/isolate.js";
import { createLimiter, isolateStats } from "../../../worker/src/sluice.js";

let now = Date.UTC(2030, 0, 1);
const clock = () => now;

const app = new Hono();

app.post("/__test/clock", async (c) => {
  now = (await c.req.json()).now;
  return c.json({ now });
});
app.get("/__test/stats", (c) => c.json(isolateStats()));
app.post("/__test/trap", (c) => {
  isolateTestHooks.trapOnNextCheck();
  return c.json({ armed: true });
});
app.post("/__test/exhaust", (c) => {
  isolateTestHooks.exhaustMemory();
  return c.json({ exhausted: true });
});

app.route("/demo", createDemoApp({ clock }));

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
    if (new URL(request.url).pathname.startsWith("/plain/")) return plainFetch(request, env, ctx);
    return app.fetch(request, env, ctx);
  },
};
