// The loader's concurrency calls (acquire, release, renew) on sluice.wasm: the same answers as the
// Catch2 suite (test/cpp/concurrency_test.cpp) through the ABI, holder ids checked, state bytes that
// carry holders from one instance to another. Run scripts/build-wasm.sh first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { SluiceCore, SluiceError } from "../../wasm-bindings/sluice.js";

const wasmBytes = readFileSync(new URL("../../wasm-bindings/sluice.wasm", import.meta.url));
const T0 = 1_700_000_000_000;
const newCore = () => SluiceCore.fromBytes(wasmBytes, { seed: new Uint32Array([1, 2, 3, 4]) });
const rule = (core, limit = 2, windowMs = 1_000) => core.addRule({ algorithm: "concurrency", limit, windowMs, keyCapacity: 16 });

test("acquire up to max, release by holder, never below zero", async () => {
  const core = await newCore();
  const r = rule(core);
  assert.equal(core.acquire(r, "k", 1, 1, T0).allowed, true);
  assert.equal(core.acquire(r, "k", 2, 1, T0).allowed, true);
  const full = core.acquire(r, "k", 3, 1, T0 + 10);
  assert.equal(full.allowed, false);
  assert.equal(full.retryAfterMs, 990);
  assert.equal(core.release(r, "k", 1, T0 + 20).allowed, true);
  assert.equal(core.release(r, "k", 1, T0 + 20).allowed, false, "a second release frees nothing");
  assert.equal(core.release(r, "k", 77, T0 + 20).remaining, 1, "an unknown holder frees nothing");
  assert.equal(core.acquire(r, "k", 3, 1, T0 + 30).allowed, true);
  assert.equal(core.acquire(r, "k", 4, 3, T0 + 30).retryAfterMs, Infinity, "more than max: never");
});

test("a holder that vanishes frees its slot after the lease; renewal keeps a live one", async () => {
  const core = await newCore();
  const r = rule(core, 1);
  assert.equal(core.acquire(r, "k", 1, 1, T0).allowed, true);
  assert.equal(core.renew(r, "k", 1, T0 + 900).allowed, true);
  assert.equal(core.acquire(r, "k", 2, 1, T0 + 1_000).allowed, false, "renewed at 900: live until 1 900");
  assert.equal(core.acquire(r, "k", 2, 1, T0 + 1_900).allowed, true);
  assert.equal(core.renew(r, "k", 1, T0 + 1_901).allowed, false, "holder 1's lease ran out");
});

test("state bytes carry the holders to another instance", async () => {
  const a = await newCore();
  const b = await newCore();
  const ra = rule(a, 3);
  const rb = rule(b, 3);
  a.acquire(ra, "k", 5, 2, T0);
  b.importState(rb, "k", a.exportState(ra, "k"));
  assert.equal(b.acquire(rb, "k", 6, 2, T0 + 1).allowed, false);
  assert.equal(b.release(rb, "k", 5, T0 + 2).remaining, 3);
});

test("holder ids and rules are checked, naming the field", async () => {
  const core = await newCore();
  const r = rule(core);
  const window = core.addRule({ algorithm: "fixed-window", limit: 2, windowMs: 1_000, keyCapacity: 16 });
  for (const holder of [-1, 2 ** 32, 1.5, "1", undefined]) {
    assert.throws(() => core.acquire(r, "k", holder, 1, T0), (e) => e instanceof SluiceError && e.field === "holder");
  }
  assert.throws(() => core.acquire(r, "k", 1, 0, T0), (e) => e instanceof SluiceError && e.field === "cost");
  assert.throws(() => core.acquire(window, "k", 1, 1, T0), (e) => e instanceof SluiceError && e.field === "rule");
  assert.throws(() => core.release(r, "k", 1, "now"), (e) => e instanceof SluiceError && e.field === "nowMs");
  assert.throws(() => core.addRule({ algorithm: "concurrency", limit: 2 ** 16 + 1, windowMs: 1_000, keyCapacity: 1 }), (e) => e.field === "limit");
});

test("the slot-0 key cache stays right between check and concurrency calls", async () => {
  const core = await newCore();
  const r = rule(core, 1);
  const w = core.addRule({ algorithm: "fixed-window", limit: 1, windowMs: 1_000, keyCapacity: 16 });
  core.check(w, "a", 1, T0);
  assert.equal(core.acquire(r, "a", 1, 1, T0).allowed, true);
  assert.equal(core.check(w, "a", 1, T0).allowed, false);
  assert.equal(core.acquire(r, "b", 1, 1, T0).allowed, true, "another key, another count");
  assert.equal(core.acquire(r, "a", 2, 1, T0).allowed, false);
});
