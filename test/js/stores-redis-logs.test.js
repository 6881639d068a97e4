// A key the Redis store's isolates contend for goes in the key's log (redis-append-script.js): one
// round trip per decision, every isolate replaying the same log to the same decisions, and the log
// folded back into the key's state. Under Node against a real redis-server through the Upstash REST
// bridge; each createRedisStore stands for one isolate.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";

import { startBridge } from "./helpers/redis-bridge.js";
import { startRedis } from "./helpers/redis-server.js";

const { createRedisStore } = await import("../../worker/src/stores/redis.js");
const { DeadlineError } = await import("../../worker/src/stores/deadline.js");
const { createRegion } = await import("../../worker/src/testing/geography.js");
const { ALGORITHMS } = await import("../../wasm-bindings/sluice.js");

const TOKEN = "logs-token-5c2e8a";
const HOUR = 3_600_000;

let redis;
let bridge;
before(async () => {
  redis = await startRedis();
  bridge = await startBridge({ redisPort: redis.port, token: TOKEN });
});
after(async () => {
  await bridge?.stop();
  await redis?.stop();
});

function rule({ name, algorithm = "fixed-window", limit, windowMs = HOUR }) {
  return { id: `${name}|${algorithm}|${limit}|${windowMs}|0`, name, algorithm, limit, windowMs, burst: 0, keyCapacity: 100 };
}
// An isolate's store with its defaults, and a wide clock tolerance (a loaded machine must not refuse).
const isolate = (options = {}) => createRedisStore({ url: bridge.url, token: TOKEN, clockToleranceMs: 2000, ...options });
const decide = (store, checks, options = {}) => store.decide(checks, { nowMs: Date.now(), ...options });
const logKey = (check) => `sluice:l:${check.rule.id}:${check.key}`;
const stateKey = (check) => `sluice:s:${check.rule.id}:${check.key}`;

/** Isolates take turns on `checks` until each has seen the key change under it (then it appends). */
async function contend(stores, checks) {
  const outcomes = [];
  for (let round = 0; round < 3; round++) for (const store of stores) outcomes.push(await decide(store, checks));
  assert.ok(stores.every((store) => store.counters.appends > 0), "every isolate appends once it saw the key contended");
  return outcomes;
}

test("a key isolates take turns on goes in its log: one round trip per decision, each on a different state, the log folded back", async () => {
  const checks = [{ rule: rule({ name: "turns", limit: 1000 }), key: "k", cost: 1 }];
  const stores = [isolate(), isolate(), isolate()];
  const outcomes = await contend(stores, checks);
  const before = stores.map((store) => store.counters.roundTrips);
  for (let i = 0; i < 30; i++) outcomes.push(await decide(stores[i % stores.length], checks));
  const roundTrips = stores.reduce((sum, store, s) => sum + store.counters.roundTrips - before[s], 0);
  assert.equal(roundTrips, 30, "one round trip per decision (a compare-and-set would be refused each time: the others wrote since)");
  // Serial: the n-th decision leaves limit - n, whichever isolate took it.
  assert.deepEqual(
    outcomes.map((o) => [o.allowed, o.remaining]),
    outcomes.map((_, n) => [true, 1000 - n - 1]),
  );
  // Each append folds what its isolate replayed last time (one fold per round wins: the others find
  // the state folded since): the log stays under two rounds of entries, and the state follows.
  const logLength = await bridge.command("LLEN", logKey(checks[0]));
  assert.ok(logLength < 2 * stores.length, `the log is folded back (${logLength} entries left)`);
  assert.equal(await bridge.command("EXISTS", stateKey(checks[0])), 1);
  const peek = await decide(isolate(), checks, { peek: true });
  assert.equal(peek.remaining, 1000 - outcomes.length - 1);
});

for (const algorithm of ALGORITHMS) {
  test(`${algorithm}: isolates replaying one log take the decisions one isolate takes alone`, async () => {
    const alone = isolate();
    const aloneChecks = [{ rule: rule({ name: `alone-${algorithm}`, algorithm, limit: 10 }), key: "k", cost: 1 }];
    const expected = [];
    for (let i = 0; i < 16; i++) expected.push(await decide(alone, aloneChecks));

    const stores = [isolate(), isolate(), isolate()];
    const checks = [{ rule: rule({ name: `replayed-${algorithm}`, algorithm, limit: 10 }), key: "k", cost: 1 }];
    const outcomes = await contend(stores, checks); // 9 decisions, the last ones appended
    for (let i = outcomes.length; i < 16; i++) outcomes.push(await decide(stores[i % stores.length], checks));
    assert.deepEqual(
      outcomes.map((o) => [o.allowed, o.remaining]),
      expected.map((o) => [o.allowed, o.remaining]),
    );
    assert.equal(outcomes.filter((o) => o.allowed).length, 10);
  });
}

test("60 requests at once over 4 isolates on a contended key: exactly the limit", async () => {
  const checks = [{ rule: rule({ name: "contended-burst", limit: 1000 }), key: "k", cost: 1 }];
  const stores = [isolate(), isolate(), isolate(), isolate()];
  await contend(stores, checks); // 12 admitted; the key is in every isolate's log mode
  const burst = [{ ...checks[0], rule: rule({ name: "contended-burst", limit: 1000 }) }];
  const spent = 12;
  const limitLeft = 10;
  // Charge the key down to 10 left, then a burst of 60 from all isolates at once.
  const filler = [{ ...burst[0], cost: 1000 - spent - limitLeft }];
  assert.equal((await decide(stores[0], filler)).allowed, true);
  const outcomes = await Promise.all(Array.from({ length: 60 }, (_, i) => decide(stores[i % stores.length], checks)));
  assert.equal(outcomes.filter((o) => o.allowed).length, limitLeft);
  assert.equal(outcomes.filter((o) => o.store !== "redis").length, 0);
});

test("a request over several rules folds a contended key's log: the compare-and-set expects it", async () => {
  const a = rule({ name: "multi-a", limit: 100 });
  const b = rule({ name: "multi-b", limit: 100 });
  const stores = [isolate(), isolate()];
  await contend(stores, [{ rule: a, key: "k", cost: 1 }]); // 6 on a:k, some of them in its log
  assert.ok((await bridge.command("LLEN", logKey({ rule: a, key: "k" }))) > 0, "a:k has a log");
  const outcome = await decide(stores[0], [
    { rule: a, key: "k", cost: 1 },
    { rule: b, key: "k", cost: 1 },
  ]);
  assert.deepEqual([outcome.allowed, outcome.remaining], [true, 93]); // a:k's 7th, b:k's 1st: the least left
  assert.equal(await bridge.command("LLEN", logKey({ rule: a, key: "k" })), 0, "the compare-and-set folded the log");
  const peek = await decide(isolate(), [{ rule: a, key: "k", cost: 1 }], { peek: true });
  assert.equal(peek.remaining, 92);
});

test("a call appended to a log and given up on: its late decision stands, and taking it back is counted as missed", async () => {
  const checks = [{ rule: rule({ name: "late-append", limit: 10 }), key: "k", cost: 1 }];
  const region = createRegion({ name: "far", rttMs: 20, lateMs: 3000 });
  const far = isolate({ roundTrip: { initialTimeoutMs: 1500, maxTimeoutMs: 1500 }, fetch: region.fetch(globalThis.fetch) });
  const near = isolate();
  await contend([far, near], checks); // 6 admitted
  region.script("late");
  const error = await decide(far, checks).then(() => null, (e) => e);
  assert.ok(error instanceof DeadlineError && error.late instanceof Promise, String(error));
  const late = await error.late;
  assert.deepEqual([late.store, late.allowed, late.remaining], ["redis", true, 3]);
  assert.deepEqual(await far.takeBack(late), { undone: 0, missed: 1 });
  assert.equal(far.counters.undoMissed, 1);
  assert.equal((await decide(near, checks, { peek: true })).remaining, 2, "the late charge stays");
});

test("a key's log and state live at least as long as what the log holds can count", async () => {
  const windowMs = 60_000;
  const checks = [{ rule: rule({ name: "log-expiry", limit: 100, windowMs }), key: "k", cost: 1 }];
  await contend([isolate(), isolate()], checks);
  const logTtl = await bridge.command("PTTL", logKey(checks[0]));
  const stateTtl = await bridge.command("PTTL", stateKey(checks[0]));
  assert.ok(logTtl > 2 * windowMs - 1000 && logTtl <= 2 * windowMs + 2000, `the log lives ${logTtl} ms`);
  assert.ok(stateTtl >= logTtl - 1000, `the state (${stateTtl} ms) outlives the log (${logTtl} ms)`);
});

test("a key reset and logged again: a fold from before the reset matches nothing (no charge lost, none revived)", async () => {
  const checks = [{ rule: rule({ name: "reset-fold", limit: 100 }), key: "k", cost: 1 }];
  const [a, b, c] = [isolate(), isolate(), isolate()];
  await contend([a, b], checks);
  await c.reset(checks);
  await decide(a, [{ ...checks[0], cost: 5 }]); // a's view: absent state, then its entry (5)
  await decide(b, checks); // b's view: absent, a's entry, its own
  await c.reset(checks);
  assert.equal((await decide(b, checks)).remaining, 99, "the first decision after the reset");
  // a's view still holds its entry from before the reset, on an absent state, as the key now does with
  // b's entry: its fold must not take b's entry for its own.
  assert.equal((await decide(a, checks)).remaining, 98);
  assert.equal((await decide(isolate(), checks, { peek: true })).remaining, 97);
});

test("a compare-and-set on a stale state appends its batch instead: one round trip; given up on, its late decision is the replayed one", async () => {
  const checks = [{ rule: rule({ name: "cas-appends", limit: 10 }), key: "k", cost: 1 }];
  const near = isolate();
  await decide(near, checks);
  await decide(near, checks); // 2 charged; `far` has never seen the key
  const region = createRegion({ name: "far", rttMs: 20, lateMs: 3000 });
  const far = isolate({ roundTrip: { initialTimeoutMs: 1500, maxTimeoutMs: 1500 }, fetch: region.fetch(globalThis.fetch) });
  await decide(far, [{ ...checks[0], key: "warm-up" }]);
  region.script("late");
  const error = await decide(far, checks).then(() => null, (e) => e);
  assert.ok(error instanceof DeadlineError && error.late instanceof Promise, String(error));
  const late = await error.late;
  // Decided on the key as Redis held it (2 charged), not on the absent state `far` sent: the 3rd.
  assert.deepEqual([late.store, late.allowed, late.remaining], ["redis", true, 7]);
  assert.deepEqual(await far.takeBack(late), { undone: 0, missed: 1 });
  const before = far.counters.roundTrips;
  const next = await decide(far, checks);
  assert.deepEqual([next.allowed, next.remaining], [true, 6]);
  assert.equal(far.counters.roundTrips - before, 1, "a stale state, one round trip");
  assert.equal((await decide(near, checks, { peek: true })).remaining, 5);
});

test("a request over several rules on a key others keep appending to is decided: its hold stops the appends for one call", async () => {
  const a = rule({ name: "starve-a", limit: 10_000 });
  const b = rule({ name: "starve-b", limit: 10_000 });
  // A generous timeout: a loaded machine must not turn a healthy call into a failure.
  const appenders = [isolate({ timeoutMs: 5000 }), isolate({ timeoutMs: 5000 }), isolate({ timeoutMs: 5000 })];
  const multi = isolate({ maxAttempts: 4, timeoutMs: 5000 }); // few attempts: after two lost, it holds the keys
  await contend(appenders, [{ rule: a, key: "k", cost: 1 }]);
  let appending = true;
  const lanes = appenders.map(async (store) => {
    let n = 0;
    while (appending) {
      await decide(store, [{ rule: a, key: "k", cost: 1 }]);
      n++;
    }
    return n;
  });
  const outcomes = [];
  for (let i = 0; i < 15; i++) {
    outcomes.push(
      await decide(multi, [
        { rule: a, key: "k", cost: 1 },
        { rule: b, key: "k", cost: 1 },
      ]),
    );
  }
  appending = false;
  const appended = (await Promise.all(lanes)).reduce((sum, n) => sum + n, 0);
  assert.ok(outcomes.every((o) => o.store === "redis" && o.allowed));
  assert.equal(multi.counters.exhausted, 0);
  assert.ok(appended > 0);
  // Every decision counted once: 9 to make the key contended, the appenders' and the 15 over both rules.
  const peek = await decide(isolate(), [{ rule: a, key: "k", cost: 1 }], { peek: true });
  assert.equal(peek.remaining, 10_000 - 9 - appended - 15 - 1);
  console.log(`several rules beside appenders: ${appended} appended, held ${multi.counters.held}, conflicts ${multi.counters.conflicts}, appenders held ${appenders.reduce((s, x) => s + x.counters.held, 0)}`);
});
