// node:test under Node: a 429 and its recovery on a clock the test advances; no sleeping.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";
import { resetLimiters, testClock } from "sluice/testing";
import { createApp } from "../../src/app.js";

const from = (address) => ({ headers: { "cf-connecting-ip": address } });

beforeEach(() => resetLimiters());

test("3 requests a minute, the 4th is a 429, and a minute later it passes", async () => {
  const clock = testClock();
  const app = createApp({ clock });
  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await app.request("/api/hello", from("192.0.2.1"))).status);
  assert.deepEqual(statuses, [200, 200, 200, 429]);
  clock.advance(60_000);
  assert.equal((await app.request("/api/hello", from("192.0.2.1"))).status, 200);
});

test("each test starts with every limit at its full quota", async () => {
  const app = createApp({ clock: testClock() });
  const response = await app.request("/api/hello", from("192.0.2.1"));
  assert.equal(response.headers.get("x-ratelimit-remaining"), "2");
});

test("the Worker's main module, which exports the Durable Object class, imports under Node", async () => {
  const worker = await import("../../src/index.js");
  assert.equal(typeof worker.default.fetch, "function");
  assert.throws(() => new worker.SluiceDurableObject({}, {}), /runs only inside workerd/);
});
