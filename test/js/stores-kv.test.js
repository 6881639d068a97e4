// The KV store: fixed-window buckets named by window number holding the core's state bytes, a TTL of
// two windows (at least 60 s), coalesced reads and writes, failures counted.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { T0, rule, startStores } from "./fixtures/stores/harness.js";

const kvStore = (options = {}) => ({ kind: "kv", options });
const HOUR = 3_600_000;

async function decide(send, isolate, store, checks, nowMs, extra = {}) {
  return (await send(isolate, { op: "decide", store, checks, nowMs, settle: true, ...extra })).outcome;
}

// The core's state bytes (README "State bytes"): u8 format, u8 algorithm, u16, u32 signature, i64 a, i64 b.
function fixedWindowState(bytes) {
  const view = new DataView(Uint8Array.from(bytes).buffer);
  return { format: view.getUint8(0), algorithm: view.getUint8(1), window: Number(view.getBigInt64(8, true)), count: Number(view.getBigInt64(16, true)) };
}

describe("kv store", () => {
  let stores;
  before(async () => {
    stores = await startStores({ isolates: 2 });
  });
  after(() => stores.dispose());

  test("names each bucket by the core's window number and stores the core's state bytes", async () => {
    const { send } = stores;
    const store = kvStore({ prefix: "naming:" });
    const r = rule({ name: "naming", limit: 10, windowMs: 1000 });
    const nowMs = T0 + 12_345;
    await decide(send, 0, store, [{ rule: r, key: "ip:1", cost: 3 }], nowMs);
    const [entry] = await send(0, { op: "kvList", prefix: "naming:" });
    const window = Math.floor(nowMs / 1000);
    assert.equal(entry.name, `naming:${window}:${r.id}:ip:1`);
    const state = fixedWindowState(await send(0, { op: "kvGet", name: entry.name }));
    assert.deepEqual(state, { format: 1, algorithm: 0, window, count: 3 });
  });

  test("buckets live two windows, and never less than KV's 60 s", async () => {
    const { send } = stores;
    const store = kvStore({ prefix: "ttl:" });
    const short = rule({ name: "short", limit: 10, windowMs: 1000 });
    const long = rule({ name: "long", limit: 10, windowMs: HOUR });
    const realNowS = Date.now() / 1000;
    await decide(send, 0, store, [{ rule: short, key: "k", cost: 1 }, { rule: long, key: "k", cost: 1 }], T0);
    const entries = await send(0, { op: "kvList", prefix: "ttl:" });
    const ttlOf = (r) => entries.find((e) => e.name.includes(r.id)).expiration - realNowS;
    // KV stamps the expiration with its own clock: allow the seconds this test takes.
    assert.ok(Math.abs(ttlOf(short) - 60) < 30, `short TTL ${ttlOf(short)}`);
    assert.ok(Math.abs(ttlOf(long) - 7200) < 30, `long TTL ${ttlOf(long)}`);
  });

  test("an isolate on its own admits exactly the limit", async () => {
    const { send } = stores;
    const store = kvStore({ prefix: "alone:" });
    const r = rule({ name: "alone", limit: 5, windowMs: HOUR });
    const allowed = [];
    for (let i = 0; i < 8; i++) allowed.push((await decide(send, 0, store, [{ rule: r, key: "k", cost: 1 }], T0 + i)).allowed);
    assert.deepEqual(allowed, [true, true, true, true, true, false, false, false]);
  });

  test("a hot key is written at most once per flush interval", async () => {
    const { send } = stores;
    const store = kvStore({ prefix: "hot:", flushIntervalMs: 60_000 });
    const r = rule({ name: "hot", limit: 1000, windowMs: HOUR });
    for (let i = 0; i < 30; i++) await decide(send, 0, store, [{ rule: r, key: "k", cost: 1 }], T0 + i * 1000);
    const midway = await send(0, { op: "counters", store });
    assert.equal(midway.writes, 1, "30 admissions in one interval: one write");
    await decide(send, 0, store, [{ rule: r, key: "k", cost: 1 }], T0 + 60_000);
    const [entry] = await send(0, { op: "kvList", prefix: "hot:" });
    assert.equal(fixedWindowState(await send(0, { op: "kvGet", name: entry.name })).count, 31);
    assert.equal((await send(0, { op: "counters", store })).writes, 2);
  });

  test("reads are coalesced: a bucket is read once per read interval", async () => {
    const { send } = stores;
    const store = kvStore({ prefix: "reads:", readIntervalMs: 1000, flushIntervalMs: 60_000 });
    const r = rule({ name: "reads", limit: 100, windowMs: HOUR });
    for (let i = 0; i < 10; i++) await decide(send, 0, store, [{ rule: r, key: "k", cost: 1 }], T0 + i * 100);
    const first = await send(0, { op: "counters", store });
    await decide(send, 0, store, [{ rule: r, key: "k", cost: 1 }], T0 + 1000);
    const second = await send(0, { op: "counters", store });
    // Each flush reads once too (read, add, write): count the decisions' reads only.
    assert.equal(first.reads - first.writes, 1);
    assert.equal(second.reads - second.writes, 2);
  });

  test("isolates see each other's admissions once their view is refreshed", async () => {
    const { send } = stores;
    const store = kvStore({ prefix: "shared:", flushIntervalMs: 0 });
    const r = rule({ name: "shared", limit: 5, windowMs: HOUR });
    for (let i = 0; i < 3; i++) await decide(send, 0, store, [{ rule: r, key: "k", cost: 1 }], T0 + i);
    const other = await decide(send, 1, store, [{ rule: r, key: "k", cost: 1 }], T0 + 10);
    assert.deepEqual([other.allowed, other.remaining], [true, 1]);
  });

  test("all checks of a request are all-or-nothing", async () => {
    const { send } = stores;
    const store = kvStore({ prefix: "aon:" });
    const roomy = rule({ name: "roomy", limit: 10, windowMs: HOUR });
    const tight = rule({ name: "tight", limit: 1, windowMs: HOUR });
    const both = [
      { rule: roomy, key: "k", cost: 1 },
      { rule: tight, key: "k", cost: 1 },
    ];
    assert.equal((await decide(send, 0, store, both, T0)).allowed, true);
    const denied = await decide(send, 0, store, both, T0 + 1);
    assert.deepEqual([denied.allowed, denied.decidingCheck], [false, 1]);
    const roomyNow = await decide(send, 0, store, [{ rule: roomy, key: "k", cost: 1 }], T0 + 2, { peek: true });
    assert.equal(roomyNow.remaining, 8);
  });

  test("a key too long for KV is named by its SHA-256", async () => {
    const { send } = stores;
    const store = kvStore({ prefix: "long:", flushIntervalMs: 0 });
    const r = rule({ name: "long", limit: 2, windowMs: HOUR });
    const key = `h:${"é".repeat(250)}`; // 502 UTF-8 bytes
    for (let i = 0; i < 3; i++) await decide(send, 0, store, [{ rule: r, key, cost: 1 }], T0 + i);
    const entries = await send(0, { op: "kvList", prefix: "long:" });
    assert.equal(entries.length, 1);
    assert.match(entries[0].name, new RegExp(`^long:${Math.floor(T0 / HOUR)}:sha256:[0-9a-f]{64}$`));
    assert.equal(fixedWindowState(await send(0, { op: "kvGet", name: entries[0].name })).count, 2);
  });

  test("a failing KV fails the request; a failed flush is counted, logged once, and retried", async () => {
    const { send } = stores;
    const store = kvStore({ prefix: "fault:", flushIntervalMs: 1000, readIntervalMs: 60_000, logIntervalMs: 60_000 });
    const r = rule({ name: "fault", limit: 10, windowMs: HOUR });
    const check = [{ rule: r, key: "k", cost: 1 }];
    try {
      await send(0, { op: "kvFault", fault: "throw" });
      await assert.rejects(decide(send, 0, store, check, T0), /injected KV read failure/);
      await send(0, { op: "kvFault", fault: null });
      await decide(send, 0, store, check, T0); // read and flushed
      await send(0, { op: "kvFault", fault: "throw" });
      await decide(send, 0, store, check, T0 + 1000); // decided from the view; its flush fails
      await decide(send, 0, store, check, T0 + 2000); // fails again
      const failed = await send(0, { op: "counters", store });
      assert.deepEqual([failed.readFailures, failed.writeFailures, failed.writes], [1, 2, 1]);
      const lines = await send(0, { op: "log", store });
      assert.equal(lines.length, 1);
      assert.match(lines[0], /^sluice: KV store: flushing 1 to fault:\d+:.* failed \(injected KV read failure\)/);
      await send(0, { op: "kvFault", fault: null });
      await decide(send, 0, store, check, T0 + 3000);
      const [entry] = await send(0, { op: "kvList", prefix: "fault:" });
      assert.equal(fixedWindowState(await send(0, { op: "kvGet", name: entry.name })).count, 4);
    } finally {
      await send(0, { op: "kvFault", fault: null });
    }
  });

  test("invalid configuration throws at construction, naming the field", async () => {
    const { send } = stores;
    const tryBuild = (options) => send(0, { op: "tryBuild", store: kvStore(options) });
    assert.match(await tryBuild({ binding: 7 }), /^SluiceConfigError: sluice: binding must be a binding/);
    assert.match(await tryBuild({ readIntervalMs: -1 }), /^SluiceConfigError: sluice: readIntervalMs /);
    assert.match(await tryBuild({ flushIntervalMs: Infinity }), /^SluiceConfigError: sluice: flushIntervalMs /);
    assert.match(await tryBuild({ maxBuckets: 0 }), /^SluiceConfigError: sluice: maxBuckets /);
    assert.match(await tryBuild({ prefix: 1 }), /^SluiceConfigError: sluice: prefix /);
    assert.match(await tryBuild({ logIntervalMs: -5 }), /^SluiceConfigError: sluice: logIntervalMs /);
    assert.equal(await tryBuild({}), "built");
  });

  test("decide without nowMs is a programming error", async () => {
    const { send } = stores;
    const r = rule({ name: "nonow", limit: 1, windowMs: HOUR });
    await assert.rejects(send(0, { op: "decide", store: kvStore(), checks: [{ rule: r, key: "k", cost: 1 }] }), /needs options.nowMs/);
  });
});
