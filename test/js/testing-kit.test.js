// sluice/testing's clock and reset, and sluice/durable-object under Node: what docs/testing.md promises.
import assert from "node:assert/strict";
import { test } from "node:test";

const { Hono } = await import("hono");
const { rateLimit, ip, SluiceConfigError } = await import("../../worker/src/hono.js");
const { createLimiter } = await import("../../worker/src/sluice.js");
const { TEST_EPOCH_MS, resetLimiters, testClock } = await import("../../worker/src/testing/index.js");

const from = (address) => ({ headers: { "cf-connecting-ip": address } });

test("testClock stands still until advanced or set, by whole milliseconds", () => {
  const clock = testClock();
  assert.equal(clock(), TEST_EPOCH_MS);
  assert.equal(clock.advance(1500), TEST_EPOCH_MS + 1500);
  assert.equal(clock(), TEST_EPOCH_MS + 1500);
  assert.equal(clock.now, TEST_EPOCH_MS + 1500);
  assert.equal(clock.set(5), 5);
  assert.equal(testClock(42)(), 42);
  for (const bad of [-1, 1.5, "10", Number.NaN]) {
    assert.throws(() => clock.advance(bad), (error) => error instanceof SluiceConfigError && error.field === "ms");
  }
  assert.throws(() => testClock(-5), (error) => error instanceof SluiceConfigError && error.field === "startMs");
});

test("a 429 and its recovery, proven by advancing the clock: no sleeping, limit + 1 requests", async () => {
  const clock = testClock();
  const app = new Hono();
  app.use("*", rateLimit({ key: ip(), limit: 3, windowSec: 60, algorithm: "fixed-window", clock }));
  app.get("/", (c) => c.text("ok"));
  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await app.request("/", from("192.0.2.1"))).status);
  assert.deepEqual(statuses, [200, 200, 200, 429]);
  clock.advance(59_999);
  assert.equal((await app.request("/", from("192.0.2.1"))).status, 429, "1 ms before the window turns");
  clock.advance(1);
  assert.equal((await app.request("/", from("192.0.2.1"))).status, 200, "the next window");
});

test("resetLimiters gives every limiter, built before it, its full quota back", async () => {
  const clock = testClock();
  const limiters = [createLimiter({ key: "a", limit: 1, windowSec: 60, clock }), createLimiter({ key: "b", limit: 2, windowSec: 60, clock })];
  const request = () => new Request("https://example.test/");
  for (const limiter of limiters) while ((await limiter.limit(request(), {})).allowed);
  assert.deepEqual(await Promise.all(limiters.map(async (limiter) => (await limiter.limit(request(), {})).allowed)), [false, false]);
  resetLimiters();
  assert.deepEqual(await Promise.all(limiters.map(async (limiter) => (await limiter.limit(request(), {})).remaining)), [0, 1]);
});

test("under Node, sluice/durable-object is a stand-in: importable, extendable, and constructing it says where it runs", async () => {
  // The package's own name resolves through its "exports" with Node's conditions, as an app's import does.
  const { SluiceDurableObject } = await import("sluice/durable-object");
  class MyObject extends SluiceDurableObject {}
  for (const Class of [SluiceDurableObject, MyObject]) assert.throws(() => new Class({}, {}), /runs only inside workerd/);
  // Like the real module, it lets options name store "durable".
  const limiter = createLimiter({ key: "k", limit: 1, windowSec: 60, store: "durable", fallback: [] });
  await assert.rejects(limiter.limit(new Request("https://example.test/"), {}), (error) => error instanceof SluiceConfigError && error.field === "bindings.durable");
});
