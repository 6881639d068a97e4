// The Redis store's batches and given-up calls, under Node against a real redis-server through the
// Upstash REST bridge. Each createRedisStore stands for one isolate. Distance is simulated through the
// store's fetch seam with the geography kit (sluice/testing), never by patching anything; every
// assertion is a count.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";

import { startBridge } from "./helpers/redis-bridge.js";
import { startRedis } from "./helpers/redis-server.js";

const { createRedisStore } = await import("../../worker/src/stores/redis.js");
const { createFallbackChain } = await import("../../worker/src/stores/chain.js");
const { createMemoryStore } = await import("../../worker/src/stores/memory.js");
const { DeadlineError } = await import("../../worker/src/stores/deadline.js");
const { createRegion } = await import("../../worker/src/testing/geography.js");
const { LENDING_ALGORITHMS } = await import("../../wasm-bindings/sluice.js");

const TOKEN = "batches-token-9e1f";
const HOUR = 3_600_000;
// How late a "late" answer comes: past any timeout a LEARNING store can have, so it always gives up first.
const LATE_MS = 3000;

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
// An isolate's store with generous timeouts: on a loaded machine a loopback call can take longer than
// the 100 ms least timeout the estimator learns from a few-ms round trip, and must not be given up here.
const HEALTHY = { initialTimeoutMs: 5000, minTimeoutMs: 2000, maxTimeoutMs: 5000 };
const isolate = (options = {}) => createRedisStore({ url: bridge.url, token: TOKEN, roundTrip: HEALTHY, ...options });
// A store whose calls a "late" answer (LATE_MS) always outlasts: its timeout is learnt, at most 1500 ms.
const LEARNING = { initialTimeoutMs: 1500, maxTimeoutMs: 1500 };
const decide = (store, checks, options = {}) => store.decide(checks, { nowMs: Date.now(), ...options });
const stateKey = (checks) => `sluice:s:${checks[0].rule.id}:${checks[0].key}`;

// Waits (bounded) until `done()` holds; the test then asserts counts.
async function until(done, rounds = 300) {
  for (let i = 0; i < rounds && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
}

test("requests of one isolate on a key go together: one script call decides each of them, in order", async () => {
  const checks = [{ rule: rule({ name: "batch-order", limit: 10 }), key: "k", cost: 1 }];
  const store = isolate();
  await decide(store, [{ ...checks[0], key: "warm-up" }]); // loads the script
  const before = { ...store.counters };
  const requestsBefore = bridge.requests;
  const outcomes = await Promise.all(Array.from({ length: 30 }, () => decide(store, checks)));
  // Each request its own decision, as if they had come one by one: 9, 8, ..., 0, then denials.
  assert.deepEqual(
    outcomes.map((o) => [o.allowed, o.remaining]),
    Array.from({ length: 30 }, (_, i) => (i < 10 ? [true, 9 - i] : [false, 0])),
  );
  assert.equal(store.counters.decisions - before.decisions, 30);
  // At most two calls: the first request may go alone, the rest wait for it and go together.
  assert.ok(store.counters.batches - before.batches <= 2, `${store.counters.batches - before.batches} calls`);
  assert.ok(bridge.requests - requestsBefore <= 2, `${bridge.requests - requestsBefore} round trips`);
});

test("a batch mixes costs, peeks and rules that deny: each request is all-or-nothing on its own", async () => {
  const wide = rule({ name: "batch-mix-wide", limit: 6 });
  const narrow = rule({ name: "batch-mix-narrow", limit: 3 });
  const both = (cost) => [
    { rule: wide, key: "k", cost },
    { rule: narrow, key: "k", cost },
  ];
  const store = isolate();
  const outcomes = await Promise.all([
    decide(store, both(2)), // admitted: wide 4 left, narrow 1
    decide(store, both(2)), // denied by narrow (1 left): charges neither
    decide(store, both(1), { peek: true }), // would admit (and leave 3 and 0); charges nothing
    decide(store, both(1)), // admitted: wide 3, narrow 0
    decide(store, both(1)), // denied
  ]);
  assert.deepEqual(
    outcomes.map((o) => [o.allowed, o.decidingCheck, o.checks[0].remaining, o.checks[1].remaining]),
    [
      [true, 1, 4, 1],
      [false, 1, 4, 1],
      [true, 1, 3, 0],
      [true, 1, 3, 0],
      [false, 1, 3, 0],
    ],
  );
  assert.equal((await decide(isolate(), [{ rule: wide, key: "k", cost: 1 }], { peek: true })).remaining, 2);
});

test("time a request waits in its isolate is not Redis's slowness: behind two calls, it is still decided by its own", async () => {
  // Redis 400 ms away and a timeout of 1000 ms per call. The third request waits for two calls ahead
  // of it (about 800 ms) and then for its own (about 400 ms): 1200 ms in all, but no call takes 1000.
  const region = createRegion({ name: "far", rttMs: 400 });
  const store = isolate({ timeoutMs: 1000, fetch: region.fetch(globalThis.fetch) });
  const a = rule({ name: "queued-a", limit: 100 });
  const b = rule({ name: "queued-b", limit: 100 });
  await decide(store, [{ rule: a, key: "k", cost: 1 }]); // loads the script, learns the clock
  const first = decide(store, [{ rule: a, key: "k", cost: 1 }]);
  const second = decide(store, [
    { rule: a, key: "k", cost: 1 },
    { rule: b, key: "k", cost: 1 },
  ]); // other keys: a call of its own, behind the first
  const third = decide(store, [{ rule: a, key: "k", cost: 1 }]); // behind the second
  const outcomes = await Promise.all([first, second, third]);
  assert.deepEqual(outcomes.map((o) => [o.store, o.allowed]), [["redis", true], ["redis", true], ["redis", true]]);
  assert.equal(store.counters.givenUp, 0);
});

// A call the store gave up on: each request's DeadlineError carries `late`, its decision once the
// call's answer comes; the fallback chain (chain.js) takes back what it answered otherwise.
async function givenUpBurst(store, region, checks, count) {
  region.script("late"); // delivered (Redis charges the requests) but answered after the store gave up
  const errors = await Promise.all(Array.from({ length: count }, () => decide(store, checks).then(() => null, (e) => e)));
  assert.ok(errors.every((e) => e instanceof DeadlineError && e.late instanceof Promise), String(errors));
  return Promise.all(errors.map((e) => e.late));
}

test("a call given up on that lands anyway: each request's late decision, and a charge the chain denied is taken back", async () => {
  const checks = [{ rule: rule({ name: "late-undo", limit: 5 }), key: "k", cost: 1 }];
  const region = createRegion({ name: "far", rttMs: 20, lateMs: LATE_MS });
  const store = isolate({ roundTrip: LEARNING, fetch: region.fetch(globalThis.fetch) });
  await decide(store, [{ ...checks[0], key: "warm-up" }]);
  const late = await givenUpBurst(store, region, checks, 3);
  assert.deepEqual(late.map((o) => [o.store, o.allowed, o.remaining]), [["redis", true, 4], ["redis", true, 3], ["redis", true, 2]]);
  assert.equal(store.counters.givenUp, 1);
  assert.equal(store.counters.lateApplied, 1);
  // The chain denied the second (say): its charge alone is taken back; the first and third stay.
  assert.deepEqual(await store.takeBack(late[1]), { undone: 1, missed: 0 });
  assert.equal((await decide(isolate(), checks, { peek: true })).remaining, 2, "two charges left: one more leaves 2");
  assert.deepEqual(await store.takeBack(late[0]), { undone: 1, missed: 0 });
  assert.deepEqual(await store.takeBack(late[2]), { undone: 1, missed: 0 });
  // All taken back: the key is as before the call, absent (its full quota).
  assert.equal(await bridge.command("EXISTS", stateKey(checks)), 0);
  assert.equal(store.counters.undone, 3);
  // Nothing twice, and an outcome that is no late one takes nothing back.
  assert.deepEqual(await store.takeBack(late[1]), { undone: 0, missed: 0 });
  assert.deepEqual(await store.takeBack(await decide(store, checks)), { undone: 0, missed: 0 });
});

test("through the fallback chain: a given-up call's late admissions the chain denied are taken back, and slow is not failed", async () => {
  const checks = [{ rule: rule({ name: "late-chain", limit: 5 }), key: "k", cost: 1 }];
  // Late past the store's timeout (at most 1500 ms) but within the chain's late window (8 timeouts,
  // at least 8 x 300 ms: round-trip.js's least timeout).
  const region = createRegion({ name: "far", rttMs: 20, lateMs: 1800 });
  const store = isolate({ roundTrip: LEARNING, fetch: region.fetch(globalThis.fetch) });
  await decide(store, [{ ...checks[0], key: "warm-up" }]);
  // store: "redis"'s defaults: no fallback, and a denial when Redis does not answer in time.
  const chain = createFallbackChain({ primary: store, failMode: "closed", log: () => {} });
  region.script("late");
  const outcomes = await Promise.all(Array.from({ length: 3 }, () => chain.decide(checks, { nowMs: Date.now() })));
  assert.deepEqual(outcomes.map((o) => [o.allowed, o.store]), [[false, "none"], [false, "none"], [false, "none"]]);
  await until(() => chain.counters.late.undone + chain.counters.late.undoMissed >= 3);
  // The call landed and admitted all three; the chain had denied them: the answered decision wins.
  assert.equal(chain.counters.late.answered, 3);
  assert.equal(chain.counters.late.undone, 3);
  assert.equal(chain.counters.circuitOpened, 0);
  assert.equal(store.counters.undone, 3);
  assert.equal(await bridge.command("EXISTS", stateKey(checks)), 0, "the key is as before the call: absent");
});

test("a late charge another isolate built on cannot be taken back: it stays, and is counted", async () => {
  const checks = [{ rule: rule({ name: "late-missed", limit: 5 }), key: "k", cost: 1 }];
  const region = createRegion({ name: "far", rttMs: 20, lateMs: LATE_MS });
  const store = isolate({ roundTrip: LEARNING, fetch: region.fetch(globalThis.fetch) });
  await decide(store, [{ ...checks[0], key: "warm-up" }]);
  const errors = [];
  region.script("late");
  await decide(store, checks).catch((e) => errors.push(e));
  // Another isolate charges on top of the given-up call's write before its answer comes.
  assert.equal((await decide(isolate(), checks)).remaining, 3);
  const [late] = await Promise.all(errors.map((e) => e.late));
  assert.equal(late.allowed, true);
  assert.deepEqual(await store.takeBack(late), { undone: 0, missed: 1 });
  assert.equal(store.counters.undoMissed, 1);
  assert.equal((await decide(isolate(), checks, { peek: true })).remaining, 2, "the late charge stays: errs towards denying");
});

test("leases over compare-and-set: 4 isolates decide a hot key mostly from leases, and never admit beyond the limit, for every lending algorithm", async () => {
  const { createLeasedRedisStore } = await import("../../worker/src/stores/redis-leases.js");
  // Round-robin, one request at a time per isolate, 60 each.
  async function run(name, algorithm, limit) {
    const checks = [{ rule: rule({ name, algorithm, limit }), key: "hot", cost: 1 }];
    const isolates = Array.from({ length: 4 }, () => createLeasedRedisStore({ redis: isolate() }));
    const requestsBefore = bridge.requests;
    let admitted = 0;
    let local = 0;
    for (let i = 0; i < 240; i++) {
      const outcome = await isolates[i % 4].decide(checks, { nowMs: Date.now() });
      assert.equal(outcome.store, "redis");
      if (outcome.allowed) admitted++;
      if (outcome.lease === true) local++;
    }
    return { checks, admitted, local, roundTrips: bridge.requests - requestsBefore };
  }
  for (const algorithm of LENDING_ALGORITHMS) {
    // Below the limit: nearly every decision from a lease, with no round trip.
    const warm = await run(`leased-warm-${algorithm}`, algorithm, 1000);
    assert.equal(warm.admitted, 240);
    assert.ok(warm.local >= 200, `${algorithm}: ${warm.local} of 240 decided from leases`);
    // At most a third of a round trip per decision (without leases: about 2.5). Background refills
    // (leases.js asks for a warm key's next lease before it runs out) are round trips too.
    assert.ok(warm.roundTrips <= 240 / 3, `${algorithm}: ${warm.roundTrips} round trips for 240 decisions`);
    // At the limit: never beyond it (lent units are charged when lent), and little is stranded.
    const hot = await run(`leased-hot-${algorithm}`, algorithm, 100);
    assert.ok(hot.admitted <= 100, `${algorithm}: ${hot.admitted} admitted of 100`);
    assert.ok(hot.admitted >= 90, `${algorithm}: ${hot.admitted} admitted of 100`);
    assert.equal((await decide(isolate(), hot.checks, { peek: true })).allowed, false);
    console.log(`${algorithm}: below the limit ${warm.local}/240 from leases in ${warm.roundTrips} round trips; at the limit ${hot.admitted} of 100 admitted`);
  }
});

test("a call that never lets go of its keys (its request cancelled) is overtaken after its bound, and counted", async () => {
  const { KeyTurns } = await import("../../worker/src/stores/redis-batches.js");
  const turns = new KeyTurns(10, () => 50);
  const ran = [];
  // The first batch's work never settles and never releases: a request workerd cancelled mid-call.
  turns.join(["k"], "stuck", () => new Promise(() => {}));
  await new Promise((resolve) => setTimeout(resolve, 0));
  // Requests that come meanwhile form one batch behind it, which goes once the bound has passed.
  const done = new Promise((resolve) => {
    for (const name of ["a", "b", "c"]) {
      turns.join(["k"], name, async (requests, release) => {
        release();
        ran.push(requests);
        resolve();
      });
    }
  });
  await done;
  assert.deepEqual(ran, [["a", "b", "c"]]);
  assert.equal(turns.overdue, 1);
});
