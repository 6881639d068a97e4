// Issue 11 §3-§5 through the loader: the eviction summary keeps a flood from resetting a limited key and
// its signal is in stats, rules whose delays could pass 2^53 are refused naming the field, and
// countDenied keeps a hammering client limited. (The C++ suites prove the same on the core; these
// prove the loader carries it.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { SluiceCore, SluiceError } from "../../wasm-bindings/sluice.js";
import { normalizeRuleSpec } from "../../worker/src/engine/options.js";
import { SluiceConfigError } from "../../worker/src/engine/errors.js";

const wasmBytes = readFileSync(new URL("../../wasm-bindings/sluice.wasm", import.meta.url));
const NOW = 1_700_000_000_000;
const newCore = () => SluiceCore.fromBytes(wasmBytes, { seed: new Uint32Array([1, 2, 3, 4]) });
const ALGORITHMS = ["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "leaky-bucket", "gcra"];

test("a flood of keys spending their whole quota never resets an exhausted key, and stats say the table is too small", async () => {
  for (const algorithm of ALGORITHMS) {
    const core = await newCore();
    const rule = core.addRule({ algorithm, limit: 1, windowMs: 60_000, keyCapacity: 100 });
    assert.equal(core.check(rule, "login:alice", 1, NOW).allowed, true);
    let extra = 0;
    for (let i = 0; i < 20_000; i++) {
      core.check(rule, `flood-${i}`, 1, NOW + Math.floor(i / 100));
      if (i % 50 === 49 && core.check(rule, "login:alice", 1, NOW + Math.floor(i / 100)).allowed) extra++;
    }
    assert.equal(extra, 0, `${algorithm}: the exhausted key was admitted again`);
    const stats = core.stats(rule);
    assert.ok(stats.evictionsRestricting > 0, `${algorithm}: ${JSON.stringify(stats)}`);
    assert.equal(stats.evictionsRestricting, stats.evictions, "every flood key still owed its quota");
    assert.ok(stats.summaryStarts > 0);
    assert.equal(stats.summaryBytes, 2 * 256 * 16);
    assert.equal(stats.memoryBytes > stats.summaryBytes, true);
  }
});

test("a reset key is at full quota even when the eviction summary holds use for it", async () => {
  const core = await newCore();
  const rule = core.addRule({ algorithm: "fixed-window", limit: 1, windowMs: 60_000, keyCapacity: 10 });
  for (let i = 0; i < 5_000; i++) core.check(rule, `flood-${i}`, 1, NOW);
  core.reset(rule, "someone");
  const fresh = core.check(rule, "someone", 1, NOW);
  assert.equal(fresh.allowed, true);
  assert.equal(fresh.remaining, 0);
});

test("a bucket whose delays could pass 2^53 ms is refused, naming burst", async () => {
  const core = await newCore();
  for (const algorithm of ["token-bucket", "leaky-bucket", "gcra"]) {
    assert.throws(
      () => core.addRule({ algorithm, limit: 1, windowMs: 2 ** 36, burst: 2 ** 25, keyCapacity: 1 }),
      (error) => error instanceof SluiceError && error.field === "burst",
    );
  }
  assert.throws(
    () => normalizeRuleSpec({ algorithm: "gcra", limit: 1, windowMs: 2 ** 36, burst: 2 ** 25, keyCapacity: 1 }),
    (error) => error instanceof SluiceConfigError && error.field === "burst",
  );
});

test("countDenied: a sliding-counter option, refused elsewhere naming it, and a hammering client stays limited", async () => {
  const core = await newCore();
  assert.throws(
    () => core.addRule({ algorithm: "fixed-window", limit: 10, windowMs: 1000, keyCapacity: 10, countDenied: true }),
    (error) => error instanceof SluiceError && error.field === "countDenied",
  );
  assert.throws(
    () => normalizeRuleSpec({ algorithm: "gcra", limit: 10, windowSec: 1, countDenied: true }),
    (error) => error instanceof SluiceConfigError && error.field === "countDenied",
  );
  const plain = core.addRule({ algorithm: "sliding-counter", limit: 10, windowMs: 1000, keyCapacity: 10 });
  const all = core.addRule({ algorithm: "sliding-counter", limit: 10, windowMs: 1000, keyCapacity: 10, countDenied: true });
  const start = 1_000_000;
  for (let i = 0; i < 100; i++) {
    core.check(plain, "c", 1, start + i);
    core.check(all, "c", 1, start + i);
  }
  assert.equal(core.peek(plain, "c", 1, start + 1500).allowed, true, "10 admitted weigh 5 half-way through the next window");
  const limited = core.peek(all, "c", 1, start + 1500);
  assert.equal(limited.allowed, false, "100 sent weigh 50");
  assert.equal(limited.retryAfterMs, 410);
  const normalized = normalizeRuleSpec({ algorithm: "sliding-counter", limit: 10, windowSec: 1, countDenied: true });
  assert.equal(normalized.countDenied, true);
  assert.match(normalized.id, /\|all$/, "its own id: another count than the plain rule's");
});
