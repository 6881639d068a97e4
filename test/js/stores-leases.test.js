// Leased quotas: isolates decide hot keys from quota the Durable Object lent them, and everything lent
// plus everything admitted directly never exceeds the rule, across isolates, restarts and failures.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { T0, rule, startStores } from "./fixtures/stores/harness.js";

const ISOLATES = 4;
// The tests that count round trips and lent units call by call turn the background refill off: its
// answer lands whenever it lands (test/js/planet-leases.test.js tests the refill, by counts that hold
// whatever the timing).
const CALL_BY_CALL = { refill: false };
const durable = (name) => ({ kind: "durable", options: { name } });
const leased = (name, options = {}) => ({ kind: "leased", durable: durable(name), options });
const chained = (name, options = {}) => ({
  kind: "chain",
  primary: leased(name, options),
  memory: { kind: "memory" },
  options: { breaker: false, preFilter: false, timeoutMs: 1000 },
});

async function setObject(send, name, knob, value) {
  await send(0, { op: "object", name, method: "setKnob", args: [knob, value] });
}

async function decide(send, isolate, store, checks, nowMs) {
  return (await send(isolate, { op: "decide", store, checks, nowMs })).outcome;
}

describe("leased quotas", () => {
  let stores;
  before(async () => {
    stores = await startStores({ isolates: ISOLATES });
  });
  after(() => stores.dispose());

  test("never admit more than the limit across 4 isolates under concurrent bursts", async () => {
    const { send } = stores;
    // The buckets' clock stands still here, so their bound is the burst (the limit).
    for (const [algorithm, limit] of [["fixed-window", 200], ["sliding-log", 150], ["sliding-counter", 150], ["token-bucket", 150], ["gcra", 120]]) {
      const name = `burst-${algorithm}`;
      await setObject(send, `${name}/1/0`, "clock", T0 + 15_000);
      const r = rule({ name, algorithm, limit, windowMs: 60_000 });
      const checks = [{ rule: r, key: "hot", cost: 1 }];
      const store = leased(name);
      // 30 waves of 10 concurrent requests per isolate, all isolates at once: 1,200 attempts.
      let admitted = 0;
      let leasedDecisions = 0;
      for (let wave = 0; wave < 30; wave++) {
        const results = await Promise.all(
          Array.from({ length: ISOLATES }, (_, i) => send(i, { op: "burst", store, checks, count: 10, nowMs: 1_000 + wave })),
        );
        for (const result of results) {
          admitted += result.admitted;
          leasedDecisions += result.leased;
        }
      }
      assert.ok(admitted <= limit, `${algorithm}: admitted ${admitted} > limit ${limit}`);
      assert.ok(leasedDecisions > 0, `${algorithm}: no decision came from a lease`);
      const counters = await Promise.all(Array.from({ length: ISOLATES }, (_, i) => send(i, { op: "counters", store })));
      assert.ok(counters.every((c) => c.unitsLent > 0), "every isolate held a lease");
      // Quota stranded in leases is bounded: most of the limit was admitted.
      assert.ok(admitted >= limit / 2, `${algorithm}: only ${admitted} of ${limit} admitted`);
      // The log's leases last past this burst, so every lent unit was used: exactly the limit.
      if (algorithm === "sliding-log") assert.equal(admitted, limit, "sliding-log: the whole limit, not one more");
    }
  });

  test("a cold key takes no lease; a warm one does, sized by its rate and what is left", async () => {
    const { send } = stores;
    const name = "cold";
    await setObject(send, `${name}/1/0`, "clock", T0);
    const r = rule({ name: "cold", limit: 100, windowMs: 60_000 });
    const store = leased(name, { leaseMs: 1000, ...CALL_BY_CALL });
    const first = await send(0, { op: "burst", store, checks: [{ rule: r, key: "k", cost: 1 }], count: 1, nowMs: 10 });
    assert.equal(first.leased, 0);
    let counters = await send(0, { op: "counters", store });
    assert.deepEqual([counters.roundTrips, counters.leasesGranted], [1, 0], "the first request of a key takes no lease");
    await send(0, { op: "burst", store, checks: [{ rule: r, key: "k", cost: 1 }], count: 1, nowMs: 11 });
    counters = await send(0, { op: "counters", store });
    // Two requests in 1 ms: a rate of 16 per lease length (the estimate's floor is leaseMs / 8); the
    // object had 98 left and lends at most a quarter: 16.
    assert.deepEqual([counters.roundTrips, counters.leasesGranted, counters.unitsLent], [2, 1, 16]);
    const local = await decide(send, 0, store, [{ rule: r, key: "k", cost: 1 }], 12);
    assert.deepEqual([local.allowed, local.store, local.lease], [true, "durable", true]);
    // Near the limit the object lends less, and below 4 left nothing at all.
    const tight = rule({ name: "cold-tight", limit: 9, windowMs: 60_000 });
    const tightChecks = [{ rule: tight, key: "t", cost: 1 }];
    const tightStore = leased(name, { leaseMs: 1000, maxLeaseUnits: 100, ...CALL_BY_CALL });
    for (let i = 0; i < 9; i++) await send(1, { op: "burst", store: tightStore, checks: tightChecks, count: 1, nowMs: 20 + i });
    const denied = await decide(send, 1, tightStore, tightChecks, 30);
    assert.equal(denied.allowed, false);
    counters = await send(1, { op: "counters", store: tightStore });
    // Leases of 1 (7 left / 4, then 5 / 4), then per-request calls from 3 left; all 9 admitted.
    assert.deepEqual([counters.leasesGranted, counters.unitsLent, counters.leasedDecisions], [2, 2, 2]);
  });

  // The window algorithms take back what was lent in the window; the sliding log takes back the lent
  // entries of the lease's end (lease.hpp).
  for (const algorithm of ["fixed-window", "sliding-log"]) {
    test(`an ended lease gives its unused units back with the next call (${algorithm})`, async () => {
      const { send } = stores;
      const name = `expiry-${algorithm}`;
      await setObject(send, `${name}/1/0`, "clock", T0);
      const r = rule({ name, algorithm, limit: 40, windowMs: 60_000 });
      const checks = [{ rule: r, key: "e", cost: 1 }];
      const store = leased(name, { leaseMs: 500, ...CALL_BY_CALL });
      await decide(send, 0, store, checks, 100);
      await decide(send, 0, store, checks, 101); // lends min(16, 38 / 4) = 9
      let counters = await send(0, { op: "counters", store });
      assert.equal(counters.unitsLent, 9);
      assert.equal((await decide(send, 0, store, checks, 102)).lease, true); // 8 left in the lease
      // Past the lease's end on the isolate's clock: the 8 go back with the next call.
      const later = await decide(send, 0, store, checks, 700);
      assert.equal(later.lease, undefined);
      counters = await send(0, { op: "counters", store });
      assert.deepEqual([counters.leasesExpired, counters.unitsReturned, counters.unitsStranded], [1, 8, 0]);
      // The object counts what was admitted (4) and what the last call lent (if any), nothing more.
      const heldNow = counters.unitsLent - 9;
      const other = await decide(send, 1, durable(name), checks, 700);
      assert.equal(other.remaining, 40 - 4 - heldNow - 1);
    });
  }

  test("a sliding log's leases with different ends never merge: each goes back by its own end", async () => {
    const { send } = stores;
    const name = "log-merge";
    const object = `${name}/1/0`;
    await setObject(send, object, "clock", T0);
    const r = rule({ name, algorithm: "sliding-log", limit: 400, windowMs: 60_000 });
    const one = [{ rule: r, key: "m", cost: 1 }];
    const store = leased(name, { leaseMs: 500, ...CALL_BY_CALL });
    await decide(send, 0, store, one, 100);
    await decide(send, 0, store, one, 101); // lends 16, ending at T0 + 500 on the object's clock
    let counters = await send(0, { op: "counters", store });
    const first = counters.unitsLent;
    for (let i = 0; i < first - 1; i++) assert.equal((await decide(send, 0, store, one, 102)).lease, true);
    // 1 unit left; a request of 2 goes to the object, which lends again, ending at T0 + 550.
    await setObject(send, object, "clock", T0 + 50);
    await decide(send, 0, store, [{ rule: r, key: "m", cost: 2 }], 103);
    counters = await send(0, { op: "counters", store });
    const second = counters.unitsLent - first;
    assert.ok(second > 0, "a second lease");
    // Past both ends on the isolate's clock: every unused unit went back (the first lease's 1 and the
    // second's all), each by its own lease's end, none stranded.
    await decide(send, 0, store, one, 800);
    counters = await send(0, { op: "counters", store });
    assert.deepEqual([counters.unitsReturned, counters.unitsStranded], [1 + second, 0]);
  });

  test("while the object is down, a lease keeps deciding until it ends, then the chain falls back", async () => {
    const { send } = stores;
    const name = "down";
    const object = `${name}/1/0`;
    await setObject(send, object, "clock", T0);
    await setObject(send, object, "fault", null);
    const r = rule({ name: "down", limit: 100, windowMs: 60_000 });
    const checks = [{ rule: r, key: "d", cost: 1 }];
    const store = chained(name, { leaseMs: 1000 });
    await decide(send, 2, store, checks, 5_000);
    await decide(send, 2, store, checks, 5_001);
    await setObject(send, object, "fault", "throw");
    const during = await decide(send, 2, store, checks, 5_500);
    assert.deepEqual([during.allowed, during.store, during.lease], [true, "durable", true]);
    const afterEnd = await decide(send, 2, store, checks, 6_100);
    assert.equal(afterEnd.store, "memory");
    assert.match(afterEnd.fallback.reason, /injected Durable Object failure/);
    await setObject(send, object, "fault", null);
  });

  test("lent units survive a restart of the object: the ledger is stored like any charge", async () => {
    const { send } = stores;
    const name = "ledger";
    const object = `${name}/1/0`;
    await setObject(send, object, "clock", T0);
    const r = rule({ name: "ledger", limit: 30, windowMs: 60_000 });
    const checks = [{ rule: r, key: "l", cost: 1 }];
    const store = leased(name, { leaseMs: 10_000 });
    await decide(send, 3, store, checks, 1);
    await decide(send, 3, store, checks, 2); // lends min(16, 28 / 4) = 7
    const { unitsLent } = await send(3, { op: "counters", store });
    assert.equal(unitsLent, 7);
    await assert.rejects(send(0, { op: "object", name: object, method: "restart" }));
    const direct = [];
    for (let i = 0; i < 25; i++) direct.push((await decide(send, 1, durable(name), checks, 3)).allowed);
    assert.equal(direct.filter(Boolean).length, 30 - 2 - 7);
  });
});

describe("leased quotas: configuration", () => {
  let stores;
  before(async () => {
    stores = await startStores();
  });
  after(() => stores.dispose());

  test("invalid lease options throw at construction, naming the field", async () => {
    const { send } = stores;
    const tryBuild = (options) => send(0, { op: "tryBuild", store: leased("cfg", options) });
    assert.match(await tryBuild({ leaseMs: 0 }), /^SluiceConfigError: sluice: lease\.leaseMs must be a whole number/);
    assert.match(await tryBuild({ leaseMs: 2.5 }), /lease\.leaseMs/);
    assert.match(await tryBuild({ maxLeaseUnits: 0 }), /lease\.maxLeaseUnits/);
    assert.match(await tryBuild({ maxKeys: -1 }), /lease\.maxKeys/);
    assert.match(await tryBuild({ refill: "yes" }), /lease\.refill must be true or false/);
    assert.equal(await tryBuild({ leaseMs: 250 }), "built");
  });
});

