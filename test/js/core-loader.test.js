// The JS loader of sluice.wasm (wasm-bindings/sluice.js): bad input is a SluiceError naming the field,
// never a silent default or a trap, and the module's memory stays within its 96 MB bound without
// breaking the instance. Decisions themselves are in core-vectors.test.js. Run scripts/build-wasm.sh first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { MAX_KEY_BYTES, SluiceCore, SluiceError, Status } from "../../wasm-bindings/sluice.js";

const wasmBytes = readFileSync(new URL("../../wasm-bindings/sluice.wasm", import.meta.url));
const NOW = 1_700_000_000_000;
const MAX_MEMORY_BYTES = 96 * 1024 * 1024;

const newCore = () => SluiceCore.fromBytes(wasmBytes, { seed: new Uint32Array([9, 8, 7, 6]) });
const fixedWindow = (overrides = {}) => ({ algorithm: "fixed-window", limit: 5, windowMs: 60_000, keyCapacity: 100, ...overrides });

// Asserts that `call` throws a SluiceError with the given status name and (if given) field.
function assertSluiceError(call, statusName, field) {
  assert.throws(call, (error) => {
    assert.ok(error instanceof SluiceError, `expected a SluiceError, got ${error}`);
    assert.equal(error.statusName, statusName, error.message);
    assert.equal(error.status, Status[statusName]);
    if (field !== undefined) {
      assert.equal(error.field, field, error.message);
      assert.match(error.message, new RegExp(field));
    }
    return true;
  });
}

test("addRule names the offending field", async () => {
  const core = await newCore();
  const cases = [
    [{ algorithm: "nope" }, "algorithm"],
    [{ algorithm: undefined }, "algorithm"],
    [{ limit: 0 }, "limit"],
    [{ limit: -1 }, "limit"],
    [{ limit: 1.5 }, "limit"],
    [{ limit: NaN }, "limit"],
    [{ limit: Infinity }, "limit"],
    [{ limit: "many" }, "limit"],
    [{ limit: undefined }, "limit"],
    [{ limit: 2 ** 31 + 1 }, "limit"],
    [{ limit: "5" }, "limit"],
    [{ limit: null }, "limit"],
    [{ windowMs: "60000" }, "windowMs"],
    [{ algorithm: "token-bucket", burst: "5" }, "burst"],
    [{ windowMs: 0 }, "windowMs"],
    [{ windowMs: -60_000 }, "windowMs"],
    [{ windowMs: 0.5 }, "windowMs"],
    [{ windowMs: undefined }, "windowMs"],
    [{ windowMs: 2 ** 36 + 1 }, "windowMs"],
    [{ limit: 2 ** 31, windowMs: 2 ** 36 }, "windowMs"],
    [{ burst: 5 }, "burst"],
    [{ algorithm: "token-bucket", burst: -1 }, "burst"],
    [{ algorithm: "token-bucket", burst: 2.5 }, "burst"],
    [{ algorithm: "token-bucket", burst: 2 ** 31 + 1 }, "burst"],
    [{ algorithm: "token-bucket", limit: 1, windowMs: 2 ** 36, burst: 2 ** 31 }, "burst"],
    [{ algorithm: "gcra", limit: 2 ** 31 - 1, windowMs: 1 }, "limit"],
    [{ algorithm: "sliding-log", windowMs: 2 ** 31 + 1 }, "windowMs"],
    [{ keyCapacity: 0 }, "keyCapacity"],
    [{ keyCapacity: -1 }, "keyCapacity"],
    [{ keyCapacity: 1.5 }, "keyCapacity"],
    [{ keyCapacity: undefined }, "keyCapacity"],
    [{ keyCapacity: 2 ** 32 }, "keyCapacity"],
  ];
  for (const [overrides, field] of cases) {
    assertSluiceError(() => core.addRule(fixedWindow(overrides)), "INVALID_RULE", field);
  }
  assert.equal(core.ruleCount, 0, "no refused rule was added");
  assert.equal(core.addRule(fixedWindow()), 0);
  assert.equal(core.ruleCount, 1);
});

test("keys: up to 512 UTF-8 bytes, as strings or bytes; longer ones and non-keys are refused", async () => {
  const core = await newCore();
  const rule = core.addRule(fixedWindow({ limit: 3 }));
  const charge = (key) => core.check(rule, key, 1, NOW).remaining;

  assert.equal(charge("k".repeat(MAX_KEY_BYTES)), 2);
  assert.equal(charge("é".repeat(MAX_KEY_BYTES / 2)), 2); // 2 bytes each
  assert.equal(charge("😀".repeat(MAX_KEY_BYTES / 4)), 2); // 4 bytes, 2 UTF-16 units each
  assert.equal(charge(new Uint8Array(MAX_KEY_BYTES).fill(7)), 2);
  assert.equal(charge(""), 2);
  assert.equal(charge(new Uint8Array(0)), 1, "the empty string and no bytes are the same key");
  // A string and its UTF-8 bytes are the same key, also after the ASCII fast path gave up midway.
  assert.equal(charge("abc€"), 2);
  assert.equal(charge(new TextEncoder().encode("abc€")), 1);

  for (const key of ["k".repeat(MAX_KEY_BYTES + 1), "€".repeat(171), "😀".repeat(129), "a" + "é".repeat(256),
    new Uint8Array(MAX_KEY_BYTES + 1)]) {
    assertSluiceError(() => core.check(rule, key, 1, NOW), "KEY_TOO_LONG", "key");
    assertSluiceError(() => core.peek(rule, key, 1, NOW), "KEY_TOO_LONG", "key");
    assertSluiceError(() => core.reset(rule, key), "KEY_TOO_LONG", "key");
    assertSluiceError(() => core.exportState(rule, key), "KEY_TOO_LONG", "key");
  }
  for (const key of [42, null, undefined, {}, ["a"], Symbol("k"), new Uint16Array(4), new ArrayBuffer(4)]) {
    assertSluiceError(() => core.check(rule, key, 1, NOW), "INVALID_ARGUMENT", "key");
    assertSluiceError(() => core.checkAll([{ rule, key, cost: 1 }], NOW), "INVALID_ARGUMENT", "key");
  }
  assert.equal(core.stats(rule).keys, 6, "refused keys took no slot");
});

test("costs are whole numbers from 1 to 2^31", async () => {
  const core = await newCore();
  const rule = core.addRule(fixedWindow());
  for (const cost of [0, -1, 1.5, NaN, Infinity, "1", null, undefined, 2 ** 31 + 1, 2 ** 32 + 1]) {
    assertSluiceError(() => core.check(rule, "k", cost, NOW), "INVALID_COST", "cost");
    // checkAll reads an absent cost as 1.
    if (cost === undefined || cost === null) continue;
    assertSluiceError(() => core.checkAll([{ rule, key: "k", cost: 1 }, { rule, key: "k2", cost }], NOW), "INVALID_COST", "cost");
  }
  assert.equal(core.exportState(rule, "k"), null, "nothing was charged");
  const never = core.check(rule, "k", 2 ** 31, NOW);
  assert.equal(never.allowed, false);
  assert.equal(never.retryAfterMs, Infinity);
  assert.equal(core.checkAll([{ rule, key: "k" }], NOW).remaining, 4, "cost defaults to 1 in checkAll");
});

test("rule ids must come from addRule", async () => {
  const core = await newCore();
  const rule = core.addRule(fixedWindow());
  for (const bad of [1, -1, 0.5, "0", null, undefined, NaN, 2 ** 32]) {
    assertSluiceError(() => core.check(bad, "k", 1, NOW), "UNKNOWN_RULE", "rule");
    assertSluiceError(() => core.peek(bad, "k", 1, NOW), "UNKNOWN_RULE", "rule");
    assertSluiceError(() => core.checkAll([{ rule, key: "k" }, { rule: bad, key: "k" }], NOW), "UNKNOWN_RULE", "rule");
    assertSluiceError(() => core.reset(bad, "k"), "UNKNOWN_RULE", "rule");
    assertSluiceError(() => core.exportState(bad, "k"), "UNKNOWN_RULE", "rule");
    assertSluiceError(() => core.importState(bad, "k", new Uint8Array(24)), "UNKNOWN_RULE", "rule");
    assertSluiceError(() => core.stats(bad), "UNKNOWN_RULE", "rule");
  }
  assert.equal(core.exportState(rule, "k"), null, "no refused call reached rule 0");
});

test("times are whole milliseconds from 0 to 2^42", async () => {
  const core = await newCore();
  const rule = core.addRule(fixedWindow());
  for (const now of [-1, 1.5, NaN, Infinity, undefined, 2 ** 42 + 1, "1700000000000", null, 10n]) {
    assertSluiceError(() => core.check(rule, "k", 1, now), "INVALID_ARGUMENT", "nowMs");
    assertSluiceError(() => core.peek(rule, "k", 1, now), "INVALID_ARGUMENT", "nowMs");
    assertSluiceError(() => core.checkAll([{ rule, key: "k" }, { rule, key: "j" }], now), "INVALID_ARGUMENT", "nowMs");
  }
  assert.equal(core.check(rule, "k", 1, 0).remaining, 4);
  assert.equal(core.check(rule, "k", 1, 2 ** 42).remaining, 4);
});

test("checkAll takes 1 to 16 checks and charges nothing when any is refused", async () => {
  const core = await newCore();
  const rule = core.addRule(fixedWindow());
  assertSluiceError(() => core.checkAll([], NOW), "TOO_MANY_CHECKS");
  assertSluiceError(() => core.checkAll(Array.from({ length: 17 }, () => ({ rule, key: "k" })), NOW), "TOO_MANY_CHECKS");
  assertSluiceError(() => core.checkAll([{ rule, key: "a" }, { rule, key: "x".repeat(513) }], NOW), "KEY_TOO_LONG", "key");
  assert.equal(core.exportState(rule, "a"), null);
  const sixteen = core.checkAll(Array.from({ length: 16 }, (_, i) => ({ rule, key: `k${i % 4}` })), NOW);
  assert.equal(sixteen.allowed, true);
  assert.equal(sixteen.remaining, 1, "4 checks of each key: one request of 4");
});

test("importState refuses bytes that are not a state, whatever their type or size", async () => {
  const core = await newCore();
  const rule = core.addRule(fixedWindow());
  core.check(rule, "k", 2, NOW);
  const good = core.exportState(rule, "k");
  for (const bad of [new Uint8Array(0), good.slice(0, 23), new Uint8Array(4096), "bytes", [1, 0, 0, 0], null, good.buffer]) {
    assertSluiceError(() => core.importState(rule, "copy", bad), "INVALID_STATE");
  }
  core.importState(rule, "copy", good);
  assert.equal(core.peek(rule, "copy", 1, NOW).remaining, 2);
});

test("memory stays within 96 MB: a table that cannot fit is a status, and the instance keeps working", async () => {
  const core = await newCore();
  const small = core.addRule(fixedWindow());
  assert.equal(core.check(small, "a", 1, NOW).remaining, 4);

  // A million keys fit (about 27 MB); the memory grows, and the loader's views follow it.
  const before = core.memoryBytes;
  const big = core.addRule(fixedWindow({ algorithm: "token-bucket", keyCapacity: 1_000_000 }));
  assert.ok(core.memoryBytes > before + 25_000_000, `memory grew to ${core.memoryBytes}`);
  assert.ok(core.memoryBytes <= MAX_MEMORY_BYTES);
  // The table's slots and its eviction summary (2 rows of 16384 cells of 16 bytes at this capacity).
  assert.equal(core.stats(big).summaryBytes, 2 * 16384 * 16);
  assert.equal(core.stats(big).memoryBytes, 1111112 * 24 + 2 * 16384 * 16);
  assert.equal(core.check(big, "b", 2, NOW).remaining, 3);
  assert.equal(core.check(small, "a", 1, NOW).remaining, 3, "state from before the growth is intact");

  for (const rule of [
    fixedWindow({ keyCapacity: 3_000_000 }), // about 80 MB
    fixedWindow({ algorithm: "sliding-log", limit: 10_000, keyCapacity: 10_000 }), // about 440 MB
    // A 63 MB table that fits on its own, plus 14 MB for exporting a key's state, do not both fit: the
    // rule must not be half added (added to the core but never handed out).
    fixedWindow({ algorithm: "sliding-log", limit: 1_750_000, keyCapacity: 1 }),
    fixedWindow({ algorithm: "sliding-log", limit: 2 ** 31, keyCapacity: 1 }), // 8 GB per key: past 32 bits
    fixedWindow({ keyCapacity: 2 ** 32 - 1 }),
  ]) {
    assertSluiceError(() => core.addRule(rule), "OUT_OF_MEMORY");
    assert.ok(core.memoryBytes <= MAX_MEMORY_BYTES);
  }

  assert.equal(core.ruleCount, 2);
  assert.equal(core.check(small, "a", 1, NOW).remaining, 2);
  assert.equal(core.check(big, "b", 1, NOW).remaining, 2);
  const state = core.exportState(small, "a");
  assert.equal(state.length, 24);
  core.importState(small, "a2", state);
  assert.equal(core.peek(small, "a2", 1, NOW).remaining, 1);
  const later = core.addRule(fixedWindow({ keyCapacity: 1000 }));
  assert.equal(later, 2, "rule ids stay dense after refused rules");
  assert.equal(core.check(later, "c", 5, NOW).remaining, 0);
});

// check and peek go through sluice_check_one (arguments as parameters); checkAll through sluice_check
// (the checks area). Two cores with the same seed, fed the same random requests one way and the
// other, must agree on every decision and every error, for every algorithm.
test("check and peek decide exactly as checkAll of that one check", async () => {
  const algorithms = ["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "leaky-bucket", "gcra"];
  let seed = 12345;
  const random = (n) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  for (const algorithm of algorithms) {
    const single = await newCore();
    const general = await newCore();
    const config = { algorithm, limit: 7, windowMs: 1_000, burst: algorithm.endsWith("bucket") || algorithm === "gcra" ? 9 : 0, keyCapacity: 4 };
    const ruleA = single.addRule(config);
    const ruleB = general.addRule(config);
    let now = NOW;
    for (let i = 0; i < 3_000; i++) {
      now += random(5) === 0 ? -random(300) : random(120); // mostly forward, sometimes backwards
      const key = `client-${random(6)}`; // more keys than the table holds: evictions too
      const cost = [1, 1, 1, 2, 3, 8, 10][random(7)];
      const peek = random(5) === 0;
      const at = random(50) === 0 ? -1 : now;
      let one;
      let all;
      try {
        one = peek ? single.peek(ruleA, key, cost, at) : single.check(ruleA, key, cost, at);
      } catch (error) {
        one = { error: error.statusName, field: error.field };
      }
      try {
        all = general.checkAll([{ rule: ruleB, key, cost }], at, { peek }).checks[0];
      } catch (error) {
        all = { error: error.statusName, field: error.field };
      }
      assert.deepEqual(one, all, `${algorithm}, request ${i}: ${peek ? "peek" : "check"} of ${key} cost ${cost} at ${at}`);
    }
  }
});
