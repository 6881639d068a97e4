// Auto-blocking through the middleware and createLimiter (memory store, Node, app.request()): an
// attacker the rule keeps refusing is refused everything for the block's length, told its end, whatever
// the window says; 429s spread wider than the span never block; the admin API lists and lifts blocks
// behind its token, logging no key; bad options are refused naming the field.
import assert from "node:assert/strict";
import { test } from "node:test";

// "kv" is named by string below: its module registers the name when loaded.
await import("../../worker/src/stores/kinds/kv.js");
const { Hono } = await import("hono");
const { rateLimit, ip } = await import("../../worker/src/hono.js");
const { autoBlock, blocksAdmin, createLimiter, SluiceConfigError } = await import("../../worker/src/sluice.js");

const T0 = Date.UTC(2030, 0, 1);
const TOKEN = "t".repeat(40);
const from = (address) => ({ headers: { "cf-connecting-ip": address } });

// 2 requests per 10 s; 3 refusals within a minute block the key for 5 minutes.
function loginApp(clock) {
  const app = new Hono();
  const limiter = rateLimit({ name: "login", key: ip(), limit: 2, windowSec: 10, algorithm: "fixed-window", autoBlock: autoBlock({ after: 3, withinSec: 60, blockSec: 300 }), clock });
  app.post("/login", limiter, (c) => c.text("ok"));
  return { app, limiter };
}

test("an attacker refused `after` times within the span is refused everything for the block, told its end by Retry-After", async () => {
  let now = T0;
  const { app, limiter } = loginApp(() => now);
  const attacker = from("203.0.113.66");
  const send = async () => (await app.request("/login", { method: "POST", ...attacker })).status;
  const seen = [];
  for (let i = 0; i < 5; i++) seen.push(await send());
  assert.deepEqual(seen, [200, 200, 429, 429, 429]);
  // The strikes are spent: the next request starts the block, whatever the rule would say.
  const first = await app.request("/login", { method: "POST", ...attacker });
  assert.deepEqual([first.status, first.headers.get("retry-after")], [429, "300"]);

  // Two windows later the rule alone would admit 2: still refused, Retry-After counting down.
  now = T0 + 30_000;
  const later = await app.request("/login", { method: "POST", ...attacker });
  assert.deepEqual([later.status, later.headers.get("retry-after")], [429, "270"]);
  // Hammering does not move the block's end; another client is not affected.
  for (let i = 0; i < 20; i++) await send();
  now = T0 + 299_999;
  const lastMs = await app.request("/login", { method: "POST", ...attacker });
  assert.deepEqual([lastMs.status, lastMs.headers.get("retry-after")], [429, "1"]);
  assert.equal((await app.request("/login", { method: "POST", ...from("203.0.113.67") })).status, 200);

  // At the block's end: the rule's quota again, and fresh strikes.
  now = T0 + 300_000;
  const after = [];
  for (let i = 0; i < 3; i++) after.push(await send());
  assert.deepEqual(after, [200, 200, 429]);
  const [counters] = limiter.blocks.counters();
  assert.deepEqual(counters, { rule: "login", strikes: 4, blocksStarted: 1, refusedWhileBlocked: 23, lifted: 0, failures: 0 });
});

test("429s spread wider than the span never block the key", async () => {
  let now = T0;
  const limiter = createLimiter({ name: "slow", key: ip(), limit: 1, windowSec: 30, algorithm: "fixed-window", autoBlock: autoBlock({ after: 2, withinSec: 60, blockSec: 600 }), clock: () => now });
  const request = new Request("https://example.test/", from("198.51.100.5"));
  const statuses = [];
  // One refusal every 31 s: never 2 within 60 s... and 3 within 62 s would block: the span is exact.
  for (let step = 0; step < 6; step++) {
    now = T0 + step * 31_000;
    statuses.push((await limiter.limit(request)).allowed, (await limiter.limit(request)).allowed);
  }
  assert.deepEqual(statuses, [true, false, true, false, true, false, true, false, true, false, true, false]);
  assert.equal(limiter.blocks.counters()[0].blocksStarted, 0);
});

test("only the auto-blocking rule's own 429s are strikes; its refusal while blocked charges no rule", async () => {
  let now = T0;
  const limiter = createLimiter({
    key: ip(),
    algorithm: "fixed-window",
    rules: [
      { name: "burst", limit: 1, windowSec: 1 },
      { name: "minute", limit: 100, windowSec: 60, autoBlock: autoBlock({ after: 1, withinSec: 60, blockSec: 60 }) },
    ],
    clock: () => now,
  });
  const request = new Request("https://example.test/", from("192.0.2.9"));
  for (let i = 0; i < 10; i++) await limiter.limit(request); // 9 refusals by "burst": no strike
  now += 1000;
  assert.equal((await limiter.limit(request)).allowed, true);
  assert.equal(limiter.blocks.counters()[0].strikes, 0);
  assert.equal((await limiter.get(request)).checks[1].remaining, 98);
});

test("the admin API lists the blocks and lifts one behind its token, logging a fingerprint and never the key", async () => {
  let now = T0;
  const { app, limiter } = loginApp(() => now);
  const lines = [];
  const admin = blocksAdmin({ limiters: [limiter], tokenSecret: "ADMIN_TOKEN", log: (line) => lines.push(line) });
  const env = { ADMIN_TOKEN: TOKEN };
  const attacker = { method: "POST", ...from("203.0.113.80") };
  for (let i = 0; i < 6; i++) await app.request("/login", attacker);
  assert.equal((await app.request("/login", attacker)).status, 429);

  const call = (method, token, body) =>
    admin(new Request("https://admin.test/blocks", { method, headers: { authorization: `Bearer ${token}`, "x-sluice-actor": "oncall" }, ...(body ? { body: JSON.stringify(body) } : {}) }), env);
  assert.deepEqual(await (await call("GET", TOKEN)).json(), { blocks: [{ rule: "login", key: "ip:203.0.113.80", untilMs: T0 + 300_000 }] });
  // A wrong token, a missing token or a short configured one lifts nothing.
  assert.equal((await call("DELETE", `${TOKEN}x`, { rule: "login", key: "ip:203.0.113.80" })).status, 401);
  assert.equal((await admin(new Request("https://admin.test/blocks", { method: "DELETE", body: "{}" }), env)).status, 401);
  assert.equal((await admin(new Request("https://admin.test/blocks", { headers: { authorization: "Bearer short" } }), { ADMIN_TOKEN: "short" })).status, 503);
  assert.equal((await app.request("/login", attacker)).status, 429);
  assert.equal((await call("DELETE", TOKEN, { rule: "nope", key: "ip:203.0.113.80" })).status, 404);
  assert.equal((await call("DELETE", TOKEN, { rule: "login" })).status, 400);
  assert.deepEqual(lines, []);

  const lifted = await call("DELETE", TOKEN, { rule: "login", key: "ip:203.0.113.80" });
  assert.deepEqual([lifted.status, await lifted.json()], [200, { lifted: true }]);
  assert.deepEqual(await (await call("GET", TOKEN)).json(), { blocks: [] });
  // The block is gone from the store: the next request is the rule's (its window, 2 per 10 s).
  now += 10_000;
  assert.equal((await app.request("/login", attacker)).status, 200);
  assert.equal(lines.length, 1);
  const logged = JSON.parse(lines[0]);
  assert.deepEqual([logged.event, logged.actor, logged.rule, /^[0-9a-f]{16}$/.test(logged.fingerprint)], ["sluice.block.lift", "oncall", "login", true]);
  assert.ok(!lines[0].includes("203.0.113.80"), "the key never reaches the log");
  assert.equal(limiter.blocks.counters()[0].lifted, 1);
});

test("auto-blocking options are refused naming the field", () => {
  const refused = (make) => {
    try {
      make();
    } catch (error) {
      assert.ok(error instanceof SluiceConfigError, String(error));
      return error.field;
    }
    assert.fail("not refused");
  };
  assert.equal(refused(() => autoBlock({ after: 0, withinSec: 60, blockSec: 60 })), "autoBlock.after");
  assert.equal(refused(() => autoBlock({ after: 3, blockSec: 60 })), "autoBlock.withinSec");
  assert.equal(refused(() => autoBlock({ after: 3, withinSec: 60, withinMs: 60_000, blockSec: 60 })), "autoBlock.withinMs");
  assert.equal(refused(() => autoBlock({ after: 3, withinSec: 60, blockSec: -1 })), "autoBlock.blockSec");
  assert.equal(refused(() => autoBlock({ after: 3, withinSec: 60, blockSec: 60, blockfor: 1 })), "autoBlock.blockfor");
  assert.equal(refused(() => createLimiter({ key: ip(), limit: 1, windowSec: 1, autoBlock: { after: 3 } })), "autoBlock");
  const spec = autoBlock({ after: 3, withinSec: 60, blockSec: 60 });
  assert.equal(refused(() => createLimiter({ key: ip(), rules: [{ limit: 1, windowSec: 1, autoBlock: spec }], store: "kv" })), "rules[0].autoBlock");
  assert.equal(refused(() => createLimiter({ key: ip(), rules: [{ limit: 1, windowSec: 1, autoBlock: autoBlock({ after: 3, withinSec: 60, blockSec: 10 ** 12 }) }] })), "rules[0].autoBlock.blockMs");
  assert.equal(refused(() => blocksAdmin({ limiters: [], tokenSecret: "T" })), "limiters");
});
