// The loader skips copying a string key already in the I/O area (wasm-bindings/sluice.js #writeKey).
// These prove the shortcut never lets one key's bytes stand in for another's.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { SluiceCore } from "../../wasm-bindings/sluice.js";

const bytes = readFileSync(new URL("../../wasm-bindings/sluice.wasm", import.meta.url));
const NOW = 1_700_000_000_000;

async function limiter() {
  const core = await SluiceCore.fromBytes(bytes, { seed: new Uint32Array([1, 2, 3, 4]) });
  const rule = core.addRule({ algorithm: "fixed-window", limit: 10, windowMs: 60_000, keyCapacity: 100 });
  return { core, rule };
}

test("a repeated key, alternating keys and equal strings from different sources count per key", async () => {
  const { core, rule } = await limiter();
  assert.equal(core.check(rule, "a", 1, NOW).remaining, 9);
  assert.equal(core.check(rule, "a", 1, NOW).remaining, 8);
  assert.equal(core.check(rule, "b", 1, NOW).remaining, 9);
  assert.equal(core.check(rule, ["a"].join(""), 1, NOW).remaining, 7);
  assert.equal(core.check(rule, "ab", 1, NOW).remaining, 9);
  assert.equal(core.check(rule, "a", 1, NOW).remaining, 6);
});

test("a byte key changed in place is read afresh", async () => {
  const { core, rule } = await limiter();
  const key = new Uint8Array([0x61]); // "a"
  assert.equal(core.check(rule, key, 1, NOW).remaining, 9);
  key[0] = 0x62; // now "b"
  assert.equal(core.check(rule, key, 1, NOW).remaining, 9);
  assert.equal(core.check(rule, "b", 1, NOW).remaining, 8);
  assert.equal(core.check(rule, "a", 1, NOW).remaining, 8);
});

test("checkAll, reset and exportState after a check use their own keys", async () => {
  const { core, rule } = await limiter();
  core.check(rule, "x", 3, NOW);
  core.checkAll([{ rule, key: "y", cost: 2 }, { rule, key: "x", cost: 1 }], NOW);
  assert.equal(core.check(rule, "x", 1, NOW).remaining, 5);
  assert.equal(core.peek(rule, "y", 1, NOW).remaining, 7);
  core.reset(rule, "y");
  assert.equal(core.peek(rule, "y", 1, NOW).remaining, 9);
  assert.equal(core.exportState(rule, "y"), null);
  assert.notEqual(core.exportState(rule, "x"), null);
  assert.equal(core.check(rule, "x", 1, NOW).remaining, 4);
});

test("a key that fails to encode leaves no stale key behind", async () => {
  const { core, rule } = await limiter();
  core.check(rule, "a", 1, NOW);
  assert.throws(() => core.check(rule, "é".repeat(300), 1, NOW), { name: "SluiceError", statusName: "KEY_TOO_LONG" });
  assert.equal(core.check(rule, "a", 1, NOW).remaining, 8);
});
