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

// The module may reuse its hash of the key bytes at the start of the key area when the loader says it
// did not rewrite them since the last check (sluice_abi.h: SLUICE_CHECK_KEY0_UNCHANGED). A core fed
// string keys (reused whenever equal) must then decide exactly as a core with the same seed fed the
// same keys as fresh byte arrays (never reused), through every call that writes or reads the key area,
// and through calls that fail after the key was written.
test("reusing the last check's key hash decides as hashing every key afresh", async () => {
  const seed = new Uint32Array([9, 8, 7, 6]);
  const subject = await SluiceCore.fromBytes(bytes, { seed });
  const reference = await SluiceCore.fromBytes(bytes, { seed });
  const utf8 = new TextEncoder();
  const rules = ["fixed-window", "token-bucket"].map((algorithm) => {
    const spec = { algorithm, limit: 20, windowMs: 10_000, keyCapacity: 8 };
    const id = subject.addRule(spec);
    assert.equal(reference.addRule(spec), id);
    return id;
  });
  let state = 12345;
  const random = (n) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return (state >>> 8) % n;
  };
  const keys = ["a", "b", "ab", "é", "10.0.0.1", "10.0.0.10"];
  // Both cores get the call; the reference gets every key as new bytes. Errors must match too.
  const both = (call) => {
    const outcome = (core, asKey) => {
      try {
        return { value: call(core, asKey) };
      } catch (error) {
        return { error: `${error.name} ${error.statusName}` };
      }
    };
    assert.deepEqual(outcome(subject, (k) => k), outcome(reference, (k) => utf8.encode(k)));
  };
  let key = keys[0];
  let now = NOW;
  for (let step = 0; step < 5_000; step++) {
    if (random(3) === 0) key = keys[random(keys.length)];
    const other = keys[random(keys.length)];
    const rule = rules[random(2)];
    const cost = 1 + random(3);
    now += random(300);
    switch (random(9)) {
      case 0:
        both((core, k) => core.peek(rule, k(key), cost, now));
        break;
      case 1:
        both((core, k) => core.checkAll([{ rule, key: k(key), cost: 1 }, { rule: rules[0], key: k(other), cost: 1 }], now));
        break;
      case 2:
        both((core, k) => core.reset(rule, k(other)));
        break;
      case 3:
        both((core, k) => core.exportState(rule, k(other)));
        break;
      case 4: {
        const saved = reference.exportState(rule, utf8.encode(other));
        if (saved !== null) both((core, k) => core.importState(rule, k(key), saved));
        break;
      }
      case 5:
        // The key is written before the cost is refused: the next call must not trust slot 0's hash.
        both((core, k) => core.check(rule, k(other), 0.5, now));
        break;
      case 6:
        // The module refuses the time before hashing anything: it must forget its last hash.
        both((core, k) => core.check(rule, k(other), cost, -1));
        break;
      default:
        both((core, k) => core.check(rule, k(key), cost, now));
    }
  }
});
