// Block durations through the middleware and createLimiter (memory store, Node, app.request()): the
// attacker who waits out the window is still blocked, and every response says until when; bad
// options are refused naming the field.
import assert from "node:assert/strict";
import { test } from "node:test";

// The remote stores are named by string below: their modules register the names when loaded.
await import("../../worker/src/stores/kinds/kv.js");
await import("../../worker/src/stores/kinds/durable.js");
const { Hono } = await import("hono");
const { rateLimit, ip } = await import("../../worker/src/hono.js");
const { createLimiter, SluiceConfigError } = await import("../../worker/src/sluice.js");
const { kvStore } = await import("../../worker/src/stores/kinds/kv.js");

const T0 = Date.UTC(2030, 0, 1);
const from = (address) => ({ headers: { "cf-connecting-ip": address } });

test("an attacker who exceeds a blocking rule stays blocked after the window turns, told the truth by Retry-After", async () => {
  let now = T0;
  const app = new Hono();
  app.get("/login", rateLimit({ key: ip(), limit: 3, windowSec: 10, algorithm: "fixed-window", blockSec: 300, clock: () => now }), (c) => c.text("ok"));
  const attacker = from("203.0.113.66");
  const seen = [];
  for (let i = 0; i < 4; i++) seen.push((await app.request("/login", attacker)).status);
  assert.deepEqual(seen, [200, 200, 200, 429]);

  // Three windows later a throttling rule would admit 3 more: still 429, Retry-After counting down.
  now = T0 + 30_000;
  const later = await app.request("/login", attacker);
  assert.equal(later.status, 429);
  assert.equal(later.headers.get("retry-after"), "270");
  // Hammering during the block does not move its end; another client is not affected.
  for (let i = 0; i < 20; i++) await app.request("/login", attacker);
  now = T0 + 299_999;
  const lastMs = await app.request("/login", attacker);
  assert.deepEqual([lastMs.status, lastMs.headers.get("retry-after")], [429, "1"]);
  assert.equal((await app.request("/login", from("203.0.113.67"))).status, 200);

  // At the block's end: a full quota, no more.
  now = T0 + 300_000;
  const after = [];
  for (let i = 0; i < 4; i++) after.push((await app.request("/login", attacker)).status);
  assert.deepEqual(after, [200, 200, 200, 429]);
});

test("createLimiter: the blocking denial reports the block; a throttling twin reports only the window", async () => {
  const request = new Request("https://example.test/", from("198.51.100.5"));
  const blocking = createLimiter({ key: ip(), algorithm: "fixed-window", limit: 1, windowMs: 1000, blockMs: 60_000, clock: () => T0 });
  const throttling = createLimiter({ key: ip(), algorithm: "fixed-window", limit: 1, windowMs: 1000, clock: () => T0 });
  assert.equal((await blocking.limit(request)).allowed, true);
  assert.equal((await throttling.limit(request)).allowed, true);
  const blocked = await blocking.limit(request);
  const throttled = await throttling.limit(request);
  assert.equal(blocked.allowed, false);
  assert.equal(blocked.retryAfterMs, 60_000);
  assert.equal(throttled.retryAfterMs, 1000);
});

test("block options are refused naming the field", () => {
  const refused = (options) => {
    try {
      createLimiter(options.rules === undefined ? { key: "k", limit: 5, windowSec: 60, ...options } : { key: "k", ...options });
    } catch (error) {
      assert.ok(error instanceof SluiceConfigError, String(error));
      return error.field;
    }
    return "(accepted)";
  };
  assert.equal(refused({ blockSec: 0 }), "blockSec");
  assert.equal(refused({ blockSec: -1 }), "blockSec");
  assert.equal(refused({ blockMs: 1.5 }), "blockMs");
  assert.equal(refused({ blockMs: 1000, blockSec: 1 }), "blockMs");
  assert.equal(refused({ blockSec: 2 ** 40 }), "blockSec");
  assert.equal(refused({ blockMs: 1000, countDenied: true }), "blockMs");
  assert.equal(refused({ rules: [{ limit: 1, windowSec: 1 }, { limit: 5, windowSec: 60, blockSec: "60" }] }), "rules[1].blockSec");
  assert.equal(refused({ blockMs: 1000, store: "kv" }), "blockMs");
  // The same for the store as an imported value (it used to be accepted, and KV throttled instead).
  assert.equal(refused({ blockMs: 1000, store: kvStore }), "blockMs");
  assert.equal(refused({ blockSec: 60 }), "(accepted)");
  // The durable store's default fallback chain holds KV, which throttles a blocking rule during an outage.
  assert.equal(refused({ blockSec: 60, store: "durable" }), "(accepted)");
  assert.equal(refused({ rules: [{ limit: 1, windowSec: 1 }, { limit: 5, windowSec: 60, blockSec: 60 }], store: "kv" }), "rules[1].blockSec");
});
