// The loader's lend (wasm-bindings/sluice.js) carries aheadMs to the core and brings back startsAtMs:
// near its window's end a window rule lends from the next window, usable from its start (lease.hpp,
// "lent ahead"); the Catch2 suite (test/cpp/lease_ahead_test.cpp) proves the arithmetic, this proves
// the ABI passes it both ways.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { SluiceCore, SluiceError } from "../../wasm-bindings/sluice.js";

const bytes = readFileSync(new URL("../../wasm-bindings/sluice.wasm", import.meta.url));
// A minute's start: windows of 60 s begin at T0, T0 + 60 000, ...
const T0 = 1_700_000_040_000;

async function coreWith(algorithm) {
  const core = await SluiceCore.fromBytes(bytes, { seed: new Uint32Array([1, 2, 3, 4]) });
  const rule = core.addRule({ algorithm, limit: 100, windowMs: 60_000, keyCapacity: 100 });
  return { core, rule };
}

for (const algorithm of ["fixed-window", "sliding-counter"]) {
  test(`${algorithm}: lend with aheadMs lends the next window near this one's end, from that window's start`, async () => {
    const { core, rule } = await coreWith(algorithm);
    // 5 s before the window ends, 1 s ahead: from this window, starting now.
    const now = core.lend(rule, "k", 40, 5000, T0 + 55_000, 1000);
    assert.deepEqual(now, { units: 25, expiresAtMs: T0 + 60_000, remaining: 75, startsAtMs: T0 + 55_000 });
    // 0.5 s before: from the next window (a fixed window's is empty; a sliding counter's start weighs
    // this window's 25 in whole).
    const ahead = core.lend(rule, "other", 40, 5000, T0 + 59_500, 1000);
    assert.deepEqual(ahead, { units: 25, expiresAtMs: T0 + 65_000, remaining: 75, startsAtMs: T0 + 60_000 });
    // Without aheadMs, as before: from this window.
    assert.equal(core.lend(rule, "third", 40, 5000, T0 + 59_500).startsAtMs, T0 + 59_500);
    // What was lent ahead counts from the next window's start, and goes back into it.
    assert.equal(core.check(rule, "other", 1, T0 + 60_001).remaining, 74);
    assert.equal(core.giveBack(rule, "other", 25, T0 + 65_000), 25);
    assert.throws(() => core.lend(rule, "k", 1, 5000, T0, -1), SluiceError);
  });
}
