// The API a user reaches for on day one, through Hono's app.request() under Node (memory store) and a
// durable store whose binding is missing: limits that depend on the request, counters per limiter,
// peek / get / reset, shadow mode and rollout.
import assert from "node:assert/strict";
import { test } from "node:test";

const { Hono } = await import("hono");
const { rateLimit, ip, user } = await import("../../worker/src/hono.js");
const { createLimiter, SluiceConfigError } = await import("../../worker/src/sluice.js");
const { durableStore } = await import("../../worker/src/stores/kinds/durable.js");
const { kvStore } = await import("../../worker/src/stores/kinds/kv.js");
const { MAX_LIMIT_VALUES } = await import("../../worker/src/engine/options.js");

const T0 = Date.UTC(2030, 0, 1);
const clock = () => T0;
const from = (address, extra = {}) => ({ headers: { "cf-connecting-ip": address, ...extra } });

async function statuses(app, path, init, n) {
  const seen = [];
  for (let i = 0; i < n; i++) seen.push((await app.request(path, init)).status);
  return seen;
}

test("two limiters with equal numbers and no name count apart; the same name shares the count", async () => {
  const app = new Hono();
  app.get("/a", rateLimit({ key: ip(), limit: 2, windowSec: 60, clock }), (c) => c.text("a"));
  app.get("/b", rateLimit({ key: ip(), limit: 2, windowSec: 60, clock }), (c) => c.text("b"));
  app.get("/c", rateLimit({ name: "shared-c-d", key: ip(), limit: 2, windowSec: 60, clock }), (c) => c.text("c"));
  app.get("/d", rateLimit({ name: "shared-c-d", key: ip(), limit: 2, windowSec: 60, clock }), (c) => c.text("d"));
  const client = from("192.0.2.10");
  assert.deepEqual(await statuses(app, "/a", client, 3), [200, 200, 429]);
  assert.deepEqual(await statuses(app, "/b", client, 3), [200, 200, 429], "/b has counters of its own");
  assert.deepEqual(await statuses(app, "/c", client, 1), [200]);
  assert.deepEqual(await statuses(app, "/d", client, 2), [200, 429], "/d shares /c's counter by name");
});

test("limit may be a function of the request, sync or async; each plan counts under its own limit", async () => {
  const plans = { free: 1, pro: 3 };
  for (const limit of [(c) => plans[c.req.header("x-plan")], async (c) => plans[c.req.header("x-plan")]]) {
    const app = new Hono();
    app.get("/", rateLimit({ key: user((c) => c.req.header("x-user")), limit, windowSec: 60, clock }), (c) => c.json({ limit: c.get("rateLimit")?.limit }));
    assert.deepEqual(await statuses(app, "/", from("192.0.2.20", { "x-user": "f", "x-plan": "free" }), 2), [200, 429]);
    assert.deepEqual(await statuses(app, "/", from("192.0.2.20", { "x-user": "p", "x-plan": "pro" }), 4), [200, 200, 200, 429]);
    const response = await app.request("/", from("192.0.2.20", { "x-user": "q", "x-plan": "pro" }));
    assert.equal((await response.json()).limit, 3);
    assert.match(response.headers.get("ratelimit-policy"), /;q=3;/);
  }
});

test("a limit function's value is validated like a configured limit, and its distinct values are bounded", async () => {
  let value = 0;
  const limiter = createLimiter({ key: "k", limit: () => value, windowSec: 60, clock });
  const request = new Request("http://x/");
  await assert.rejects(limiter.limit(request), (error) => error instanceof SluiceConfigError && error.field === "limit");
  for (value = 1; value <= MAX_LIMIT_VALUES; value++) assert.equal((await limiter.limit(request)).limit, value);
  await assert.rejects(limiter.limit(request), (error) => error instanceof SluiceConfigError && error.field === "limit" && /distinct value/.test(error.message));
});

test("peek charges nothing; get reports the counters; reset restores the full quota (limiter and middleware)", async () => {
  const limiter = createLimiter({ key: ip(), limit: 3, windowSec: 60, algorithm: "fixed-window", clock });
  const request = new Request("http://x/", from("192.0.2.30"));
  assert.equal((await limiter.limit(request)).remaining, 2);
  // peek and get answer what admitting one more request would leave, and charge nothing.
  for (let i = 0; i < 5; i++) assert.equal((await limiter.peek(request)).remaining, 1, "peek must not charge");
  assert.equal((await limiter.get(request)).remaining, 1);
  assert.equal((await limiter.limit(request)).remaining, 1, "the peeks charged nothing");
  await limiter.reset(request);
  assert.equal((await limiter.limit(request)).remaining, 2, "back to the full quota after reset");

  const limited = rateLimit({ key: ip(), limit: 1, windowSec: 60, clock });
  const app = new Hono();
  app.get("/", limited, (c) => c.text("ok"));
  app.post("/admin/reset", async (c) => {
    await limited.reset(c);
    return c.json({ peek: (await limited.peek(c)).allowed });
  });
  const client = from("192.0.2.31");
  assert.deepEqual(await statuses(app, "/", client, 2), [200, 429]);
  const admin = await app.request("/admin/reset", { method: "POST", ...client });
  assert.deepEqual(await admin.json(), { peek: true });
  assert.deepEqual(await statuses(app, "/", client, 2), [200, 429]);
});

test('mode "shadow" counts and reports but never denies; the headers say so', async () => {
  const app = new Hono();
  app.get("/", rateLimit({ key: ip(), limit: 1, windowSec: 60, mode: "shadow", clock }), (c) => {
    const decision = c.get("rateLimit");
    return c.json({ mode: decision?.mode, wouldDeny: decision?.wouldDeny, remaining: decision?.remaining });
  });
  const client = from("192.0.2.40");
  const first = await app.request("/", client);
  assert.deepEqual(await first.json(), { mode: "shadow", wouldDeny: false, remaining: 0 });
  const second = await app.request("/", client);
  assert.equal(second.status, 200);
  assert.deepEqual(await second.json(), { mode: "shadow", wouldDeny: true, remaining: 0 });
  assert.equal(second.headers.get("x-ratelimit-shadow"), "would-deny");
  assert.equal(second.headers.get("retry-after"), null);
});

test("rollout enforces a stable share of keys and shadows the rest", async () => {
  const limiter = createLimiter({ name: "rollout-half", key: ip(), limit: 1, windowSec: 60, rollout: 0.5, clock });
  const modes = { enforce: 0, shadow: 0 };
  for (let i = 0; i < 200; i++) {
    const request = new Request("http://x/", from(`198.51.100.${i}`));
    const first = await limiter.limit(request);
    const again = await limiter.limit(request);
    assert.equal(again.mode, first.mode, "a key stays on its side");
    assert.equal(again.allowed, first.mode === "shadow", "only enforced keys are denied");
    modes[first.mode]++;
  }
  assert.ok(modes.enforce > 60 && modes.shadow > 60, `both sides hold keys: ${JSON.stringify(modes)}`);
  assert.throws(() => createLimiter({ key: "k", limit: 1, windowSec: 1, rollout: 2 }), (e) => e instanceof SluiceConfigError && e.field === "rollout");
  assert.throws(() => createLimiter({ key: "k", limit: 1, windowSec: 1, mode: "off" }), (e) => e instanceof SluiceConfigError && e.field === "mode");
});

test("store durableStore (or kvStore) whose binding env lacks fails the request with SluiceConfigError naming it", async () => {
  for (const [store, field, binding] of [[durableStore, "bindings.durable", "SLUICE_DO"], [kvStore, "bindings.kv", "SLUICE_KV"]]) {
    const limiter = createLimiter({ key: "k", limit: 5, windowSec: 60, store, clock });
    await assert.rejects(
      limiter.limit(new Request("http://x/"), {}),
      (error) => error instanceof SluiceConfigError && error.field === field && error.message.includes(binding),
    );
    await assert.rejects(limiter.reset(new Request("http://x/"), {}), (error) => error instanceof SluiceConfigError && error.field === field);
  }
});

// These two exhaust what this isolate may build: they run last.
test("limiters built per request are refused loudly: tables run out naming `name`, and so does the 257th unnamed limiter", () => {
  let error;
  for (let i = 0; i < 100 && error === undefined; i++) {
    try {
      createLimiter({ key: "k", limit: 100, windowSec: 60 });
    } catch (caught) {
      error = caught;
    }
  }
  assert.ok(error instanceof SluiceConfigError, "the memory tables of unnamed limiters must run out");
  assert.equal(error.field, "keyCapacity");
  assert.match(error.message, /without a name has tables of its own/);

  let refused;
  for (let i = 0; i < 300 && refused === undefined; i++) {
    try {
      // No table in the isolate (the object counts, no memory fallback): only the count of unnamed limiters binds.
      createLimiter({ key: "k", limit: 100, windowSec: 60, store: durableStore, fallback: [] });
    } catch (caught) {
      refused = caught;
    }
  }
  assert.ok(refused instanceof SluiceConfigError, "the 257th unnamed limiter must be refused");
  assert.equal(refused.field, "name");
  assert.match(refused.message, /module scope/);
  // Named limiters are still built: they share their counts, whatever their number.
  assert.doesNotThrow(() => createLimiter({ name: "built-on-demand", key: "k", limit: 100, windowSec: 60, store: durableStore, fallback: [] }));
});
