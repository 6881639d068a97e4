// The Durable Object store: exact counts across isolates, all-or-nothing across rules and shards,
// state that survives restarts, storage that sweeps idle keys.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { SluiceCore } from "../../wasm-bindings/sluice.js";
import { T0, rule, startStores } from "./fixtures/stores/harness.js";

const durable = (options = {}) => ({ kind: "durable", options });

// Every object a test uses reads this clock, so windows never turn mid-test.
async function setClock(send, objectNames, nowMs) {
  for (const name of objectNames) await send(0, { op: "object", name, method: "setKnob", args: ["clock", nowMs] });
}

async function decide(send, isolate, store, checks, extra = {}) {
  return (await send(isolate, { op: "decide", store, checks, ...extra })).outcome;
}

describe("durable store", () => {
  let stores;
  before(async () => {
    stores = await startStores({ isolates: 2 });
  });
  after(() => stores.dispose());

  test("admits exactly the limit across isolates, on the object's own clock", async () => {
    const { send } = stores;
    const store = durable({ name: "exact" });
    await setClock(send, ["exact/1/0"], T0 + 15_000);
    const perMinute = rule({ name: "exact", limit: 5, windowMs: 60_000 });
    const allowed = [];
    for (let i = 0; i < 8; i++) {
      // nowMs is the isolates' clock: the object ignores it.
      const outcome = await decide(send, i % 2, store, [{ rule: perMinute, key: "user:1", cost: 1 }], { nowMs: 0 });
      assert.equal(outcome.store, "durable");
      allowed.push(outcome.allowed);
      if (i === 4) assert.deepEqual([outcome.remaining, outcome.resetMs], [0, 45_000]);
      if (i === 5) assert.equal(outcome.retryAfterMs, 45_000);
    }
    assert.deepEqual(allowed, [true, true, true, true, true, false, false, false]);
  });

  test("decides every rule of a request in one call, all-or-nothing", async () => {
    const { send } = stores;
    const store = durable({ name: "rules" });
    await setClock(send, ["rules/1/0"], T0);
    const roomy = rule({ name: "roomy", limit: 10, windowMs: 60_000 });
    const tight = rule({ name: "tight", algorithm: "token-bucket", limit: 2, windowMs: 60_000 });
    const both = [
      { rule: roomy, key: "k", cost: 1 },
      { rule: tight, key: "k", cost: 1 },
    ];
    const callsBefore = await send(0, { op: "object", name: "rules/1/0", method: "decideCalls" });
    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push(await decide(send, 0, store, both));
    const callsAfter = await send(0, { op: "object", name: "rules/1/0", method: "decideCalls" });
    assert.equal(callsAfter - callsBefore, 3, "one RPC per request");
    assert.deepEqual(outcomes.map((o) => o.allowed), [true, true, false]);
    assert.equal(outcomes[2].decidingCheck, 1);
    assert.deepEqual(outcomes[2].checks.map((d) => d.allowed), [true, false]);
    // The denied request charged neither rule: roomy still has 10 - 2 left.
    const roomyNow = await decide(send, 1, store, [{ rule: roomy, key: "k", cost: 1 }], { peek: true });
    assert.equal(roomyNow.remaining, 7);
  });

  test("a peek charges nothing and stores nothing", async () => {
    const { send } = stores;
    const store = durable({ name: "peek" });
    await setClock(send, ["peek/1/0"], T0);
    const r = rule({ name: "peek", limit: 3, windowMs: 60_000 });
    for (let i = 0; i < 4; i++) {
      const outcome = await decide(send, 0, store, [{ rule: r, key: "p", cost: 1 }], { peek: true });
      assert.deepEqual([outcome.allowed, outcome.remaining], [true, 2]);
    }
    assert.deepEqual(await send(0, { op: "object", name: "peek/1/0", method: "rows" }), []);
  });

  test("a restarted object loses no count", async () => {
    const { send } = stores;
    const store = durable({ name: "restart" });
    await setClock(send, ["restart/1/0"], T0);
    const r = rule({ name: "restart", algorithm: "sliding-log", limit: 5, windowMs: 60_000 });
    const check = [{ rule: r, key: "r", cost: 1 }];
    for (let i = 0; i < 3; i++) assert.equal((await decide(send, 0, store, check)).allowed, true);
    await assert.rejects(send(0, { op: "object", name: "restart/1/0", method: "restart" }));
    const afterRestart = [];
    for (let i = 0; i < 3; i++) afterRestart.push((await decide(send, 1, store, check)).allowed);
    assert.deepEqual(afterRestart, [true, true, false]);
  });

  test("concurrent admissions answered before a restart are all still counted after it", async () => {
    const { send } = stores;
    const store = durable({ name: "restart-burst" });
    const object = "restart-burst/1/0";
    await setClock(send, [object], T0);
    const r = rule({ name: "restart-burst", limit: 30, windowMs: 60_000 });
    const check = [{ rule: r, key: "b", cost: 1 }];
    // 2 isolates x 10 requests in flight at once: each answer comes only once its charge is committed.
    const bursts = await Promise.all([0, 1].map((i) => send(i, { op: "burst", store, checks: check, count: 10 })));
    const admittedBefore = bursts.reduce((sum, b) => sum + b.admitted, 0);
    assert.equal(admittedBefore, 20);
    // Units the object reserved for the key and had not spent are stored as charged: the restart
    // strands them (until the window ends) and forgets nothing else.
    const { unitsUnspent } = await send(0, { op: "object", name: object, method: "storageStats" });
    await assert.rejects(send(0, { op: "object", name: object, method: "restart" }));
    const afterRestart = [];
    for (let i = 0; i < 12; i++) afterRestart.push((await decide(send, 1, store, check)).allowed);
    assert.equal(afterRestart.filter(Boolean).length, 30 - admittedBefore - unitsUnspent);
  });

  test("spreads keys over shards, each key in exactly one object", async () => {
    const { send } = stores;
    const shards = 4;
    const names = Array.from({ length: shards }, (_, i) => `spread/${shards}/${i}`);
    await setClock(send, names, T0);
    const store = durable({ name: "spread", shards });
    const r = rule({ name: "spread", limit: 1, windowMs: 60_000 });
    const keys = Array.from({ length: 24 }, (_, i) => `key-${i}`);
    for (const key of keys) assert.equal((await decide(send, 0, store, [{ rule: r, key, cost: 1 }])).allowed, true);
    for (const key of keys) assert.equal((await decide(send, 1, store, [{ rule: r, key, cost: 1 }])).allowed, false);
    const rowsPerShard = [];
    for (const name of names) rowsPerShard.push((await send(0, { op: "object", name, method: "rows" })).map((row) => row.key));
    assert.deepEqual(rowsPerShard.flat().sort(), [...keys].sort());
    assert.ok(rowsPerShard.filter((rows) => rows.length > 0).length >= 2, `keys landed on one shard: ${rowsPerShard}`);
  });

  test('shards: "key" gives each key its own object', async () => {
    const { send } = stores;
    await setClock(send, ["own/key/alice", "own/key/bob"], T0);
    const store = durable({ name: "own", shards: "key" });
    const r = rule({ name: "own", limit: 2, windowMs: 60_000 });
    await decide(send, 0, store, [{ rule: r, key: "alice", cost: 1 }]);
    await decide(send, 0, store, [{ rule: r, key: "bob", cost: 2 }]);
    const alice = await send(0, { op: "object", name: "own/key/alice", method: "rows" });
    const bob = await send(0, { op: "object", name: "own/key/bob", method: "rows" });
    assert.deepEqual([alice.map((row) => row.key), bob.map((row) => row.key)], [["alice"], ["bob"]]);
  });

  test("a request spread over objects is still all-or-nothing", async () => {
    const { send } = stores;
    await setClock(send, ["split/key/a", "split/key/b"], T0);
    const store = durable({ name: "split", shards: "key" });
    const wide = rule({ name: "wide", limit: 5, windowMs: 60_000 });
    const narrow = rule({ name: "narrow", limit: 1, windowMs: 60_000 });
    const request = [
      { rule: wide, key: "a", cost: 1 },
      { rule: narrow, key: "b", cost: 1 },
    ];
    const first = await decide(send, 0, store, request);
    const second = await decide(send, 1, store, request);
    assert.equal(first.allowed, true);
    assert.deepEqual([second.allowed, second.decidingCheck, second.retryAfterMs], [false, 1, 60_000]);
    // "a" was charged by the second request's object, then the charge was taken back.
    const wideNow = await decide(send, 0, store, [{ rule: wide, key: "a", cost: 1 }], { peek: true });
    assert.equal(wideNow.remaining, 3);
    const counters = await send(1, { op: "counters", store });
    assert.deepEqual(counters, { spreadRequests: 1, undone: 1, undoMissed: 0, roundTrips: 2 });
  });

  // A late answer's charge is taken back by undo (the fallback chain reconciles it). Reservations
  // (units the object charged to a warm key ahead of its calls) must not let an undo give back more
  // than was charged: an undo of a charge whose reservation was since spent would wipe those spends.
  test("undo never gives back units a reservation already spent: admitted minus undone stays within the limit", async () => {
    const { send } = stores;
    const name = "undo-reserved";
    await setClock(send, [`${name}/1/0`], T0);
    const r = rule({ name, algorithm: "fixed-window", limit: 60, windowMs: 60_000 });
    // Warm the key (its demand makes the object reserve) and spend what it reserved, so that an
    // undoable call charges the core and reserves anew; spend exactly that reservation; take the
    // undoable call back; then drain what is left.
    const run = await send(0, {
      op: "undoSequence",
      name: `${name}/1/0`,
      rule: r,
      key: "k",
      steps: ["plain", "plain", "plain", "spend", "undoable", "spend", "undo", "drain"],
    });
    assert.ok(run.reserved > 0, "the object reserved units for the warm key");
    assert.ok(run.fromReserved > 0, "calls were decided from the reservation");
    assert.ok(run.admitted - run.undone <= 60, `admitted ${run.admitted}, undone ${run.undone}: over the limit of 60`);
    assert.equal(run.undone, 0, "the reservation made with the undone charge was spent: nothing to give back");
  });

  test("idle keys are swept by one alarm, never a timer per key", async () => {
    const { send } = stores;
    const object = "sweep/1/0";
    const store = durable({ name: "sweep" });
    const r = rule({ name: "sweep", limit: 5, windowMs: 60_000 });
    await setClock(send, [object], T0);
    await decide(send, 0, store, [{ rule: r, key: "early", cost: 1 }]);
    assert.equal(await send(0, { op: "object", name: object, method: "alarmAt" }), T0 + 60_000);
    await setClock(send, [object], T0 + 30_000);
    await decide(send, 0, store, [{ rule: r, key: "late", cost: 1 }]); // back to full quota at T0 + 60 000 too
    const slow = rule({ name: "sweep-slow", algorithm: "sliding-log", limit: 5, windowMs: 60_000 });
    await decide(send, 0, store, [{ rule: slow, key: "late", cost: 1 }]); // full again at T0 + 90 000
    assert.equal(await send(0, { op: "object", name: object, method: "alarmAt" }), T0 + 60_000, "one alarm");

    await setClock(send, [object], T0 + 60_000);
    await send(0, { op: "object", name: object, method: "runAlarm" });
    const left = await send(0, { op: "object", name: object, method: "rows" });
    assert.deepEqual(left.map((row) => [row.rule, row.key, row.expires_at]), [[slow.id, "late", T0 + 90_000]]);
    // The next sweep: when the last key expires, but no sooner than a sweep interval after this one.
    assert.equal(await send(0, { op: "object", name: object, method: "alarmAt" }), T0 + 120_000);

    await setClock(send, [object], T0 + 120_000);
    await send(0, { op: "object", name: object, method: "runAlarm" });
    assert.deepEqual(await send(0, { op: "object", name: object, method: "rows" }), []);
    assert.equal(await send(0, { op: "object", name: object, method: "alarmAt" }), null);
    const fresh = await decide(send, 1, store, [{ rule: r, key: "early", cost: 1 }]);
    assert.equal(fresh.remaining, 4);
  });

  test("invalid configuration throws at construction, naming the field", async () => {
    const { send } = stores;
    const tryBuild = (options) => send(0, { op: "tryBuild", store: durable(options) });
    assert.match(await tryBuild({ shards: 0 }), /^SluiceConfigError: sluice: shards must be a whole number from 1 to 4096, or "key"; got 0$/);
    assert.match(await tryBuild({ shards: 2.5 }), /^SluiceConfigError: sluice: shards /);
    assert.match(await tryBuild({ binding: "" }), /^SluiceConfigError: sluice: binding must name a binding/);
    assert.match(await tryBuild({ binding: { get() {} } }), /^SluiceConfigError: sluice: binding must be a binding/);
    assert.match(await tryBuild({ name: "" }), /^SluiceConfigError: sluice: name must be/);
    assert.match(await tryBuild({ timeoutMs: -1 }), /^SluiceConfigError: sluice: timeoutMs must be/);
    assert.equal(await tryBuild({ shards: "key", timeoutMs: 20 }), "built");
  });

  test("a missing binding fails the request, not the isolate", async () => {
    const { send } = stores;
    const r = rule({ name: "nobinding", limit: 1, windowMs: 60_000 });
    await assert.rejects(
      send(0, { op: "decide", store: durable({ binding: "NOPE" }), checks: [{ rule: r, key: "k", cost: 1 }] }),
      /env has no binding named "NOPE"/,
    );
    await setClock(send, ["sluice/1/0"], T0);
    assert.equal((await decide(send, 0, durable(), [{ rule: r, key: "k", cost: 1 }])).allowed, true);
  });
});

describe("durable store: reserved units", () => {
  let stores;
  before(async () => {
    stores = await startStores({ isolates: 2 });
  });
  after(() => stores.dispose());

  const stats = (send, object) => send(0, { op: "object", name: object, method: "storageStats" });

  for (const algorithm of ["fixed-window", "sliding-counter"]) {
    test(`${algorithm}: a warm key is decided from stored reservations, with exact remaining and fewer writes than calls`, async () => {
      const { send } = stores;
      const name = `reserve-${algorithm}`;
      const object = `${name}/1/0`;
      const store = durable({ name });
      await setClock(send, [object], T0 + 1000);
      const r = rule({ name, algorithm, limit: 1000, windowMs: 60_000 });
      const check = [{ rule: r, key: "hot", cost: 1 }];
      for (let i = 0; i < 200; i++) {
        const outcome = await decide(send, i % 2, store, check);
        assert.deepEqual([outcome.allowed, outcome.remaining], [true, 1000 - (i + 1)], `call ${i}`);
      }
      const s = await stats(send, object);
      assert.ok(s.callsFromReserved >= 150, `calls answered from reserved units: ${s.callsFromReserved} of 200`);
      assert.ok(s.rowsWritten <= 50, `rows written: ${s.rowsWritten} for 200 calls`);
      // A peek sees the whole quota (the reserved units go back to the key first); like any peek it
      // reports what one more request would leave.
      const peeked = await decide(send, 0, store, check, { peek: true });
      assert.deepEqual([peeked.allowed, peeked.remaining], [true, 799]);
      assert.equal((await stats(send, object)).unitsUnspent, 0);
    });
  }

  test("the limit holds exactly at its edge: reserved units are spent or given back, never lost", async () => {
    const { send } = stores;
    const object = "reserve-edge/1/0";
    const store = durable({ name: "reserve-edge" });
    await setClock(send, [object], T0);
    const r = rule({ name: "reserve-edge", limit: 60, windowMs: 60_000 });
    const check = [{ rule: r, key: "edge", cost: 1 }];
    let admitted = 0;
    // Waves of 15 requests in flight from each of 2 isolates: 120 requests for a limit of 60.
    for (let wave = 0; wave < 4; wave++) {
      const bursts = await Promise.all([0, 1].map((i) => send(i, { op: "burst", store, checks: check, count: 15 })));
      admitted += bursts.reduce((sum, b) => sum + b.admitted, 0);
    }
    assert.equal(admitted, 60);
    assert.ok((await stats(send, object)).unitsReserved > 0, "the key took reservations");
    // A cost larger than any one reservation is decided on the key's whole quota too.
    const big = rule({ name: "reserve-edge-big", limit: 20, windowMs: 60_000 });
    const one = [{ rule: big, key: "k", cost: 1 }];
    for (let i = 0; i < 10; i++) assert.equal((await decide(send, 0, store, one)).allowed, true);
    assert.equal((await decide(send, 1, store, [{ rule: big, key: "k", cost: 10 }])).allowed, true);
    assert.equal((await decide(send, 1, store, one)).allowed, false);
  });

  // The core alone, without reservations, is the reference: every answer must match it.
  for (const algorithm of ["fixed-window", "sliding-counter"]) {
    test(`${algorithm}: a random mix of costs, rule pairs, peeks and turning windows decides as the core alone`, async () => {
      const { send } = stores;
      const name = `reserve-mix-${algorithm}`;
      const object = `${name}/1/0`;
      const store = durable({ name });
      const wide = rule({ name: `${name}-a`, algorithm, limit: 60, windowMs: 60_000 });
      const narrow = rule({ name: `${name}-b`, algorithm, limit: 25, windowMs: 60_000 });
      const core = await SluiceCore.fromBytes(readFileSync(new URL("../../wasm-bindings/sluice.wasm", import.meta.url)));
      const reference = new Map([wide, narrow].map((r) => [r.id, core.addRule({ algorithm, limit: r.limit, windowMs: r.windowMs, keyCapacity: 100 })]));
      let seed = 7;
      const random = (n) => {
        seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
        return Math.floor((seed / 2 ** 31) * n); // the high bits: an LCG's low bits cycle
      };
      let nowMs = T0;
      let denied = 0;
      for (let step = 0; step < 200; step++) {
        nowMs += random(4) === 0 ? random(3000) : 0;
        await setClock(send, [object], nowMs);
        const key = ["x", "y"][random(2)];
        const kind = random(6);
        const cost = 1 + random(3);
        const checks = kind === 0 ? [{ rule: wide, key, cost }, { rule: narrow, key, cost: 1 }] : [{ rule: wide, key, cost }];
        const peek = kind === 1;
        const got = await decide(send, step % 2, store, checks, peek ? { peek: true } : {});
        const want = core.checkAll(checks.map((c) => ({ rule: reference.get(c.rule.id), key: c.key, cost: c.cost })), nowMs, { peek });
        const summary = (o) => [o.allowed, o.checks.map((c) => [c.allowed, c.remaining, c.resetMs, c.retryAfterMs])];
        if (!want.allowed) denied++;
        assert.deepEqual(summary(got), summary(want), `step ${step} at +${nowMs - T0} ms: ${peek ? "peek " : ""}${JSON.stringify(checks.map((c) => [c.rule.name, c.key, c.cost]))}`);
      }
      assert.ok(denied > 10, `the mix reaches the limits: ${denied} denials`);
      const { callsFromReserved } = await stats(send, object);
      assert.ok(callsFromReserved > 10, `reservations answered part of the mix: ${callsFromReserved} calls`);
    });
  }

  test("a restart forgets no admission and strands at most the unspent reservation", async () => {
    const { send } = stores;
    const object = "reserve-restart/1/0";
    const store = durable({ name: "reserve-restart" });
    await setClock(send, [object], T0);
    const r = rule({ name: "reserve-restart", limit: 100, windowMs: 60_000 });
    const check = [{ rule: r, key: "k", cost: 1 }];
    for (let i = 0; i < 30; i++) assert.equal((await decide(send, i % 2, store, check)).allowed, true);
    const { unitsUnspent } = await stats(send, object);
    assert.ok(unitsUnspent > 0, "the key holds a reservation when the object restarts");
    // At most a quarter of what the key had left when it was reserved.
    assert.ok(unitsUnspent <= Math.ceil(70 / 4), `unspent ${unitsUnspent}`);
    await assert.rejects(send(0, { op: "object", name: object, method: "restart" }));
    let after = 0;
    for (let i = 0; i < 100; i++) if ((await decide(send, 1, store, check)).allowed) after++;
    assert.equal(after, 100 - 30 - unitsUnspent);
  });
});

describe("durable store with persistence", () => {
  let dir;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "sluice-stores-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("counts survive a restart of Miniflare itself", async () => {
    const r = rule({ name: "persist", algorithm: "gcra", limit: 5, windowMs: 60_000 });
    const check = [{ rule: r, key: "user:9", cost: 1 }];
    const store = durable({ name: "persist" });

    const first = await startStores({ persistDir: dir });
    await setClock(first.send, ["persist/1/0"], T0);
    const before = [];
    for (let i = 0; i < 3; i++) before.push((await decide(first.send, 0, store, check)).remaining);
    await first.dispose();

    const second = await startStores({ persistDir: dir });
    try {
      const afterRestart = [];
      for (let i = 0; i < 3; i++) afterRestart.push((await decide(second.send, 0, store, check)).allowed);
      assert.deepEqual(before, [4, 3, 2]);
      assert.deepEqual(afterRestart, [true, true, false]);
    } finally {
      await second.dispose();
    }
  });
});
