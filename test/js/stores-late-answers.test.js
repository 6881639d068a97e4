// What the fallback chain does with a primary call it stopped waiting for (stores/chain.js): the
// answered decision wins, and whatever cannot be reconciled is counted; a fallback that weakens the
// primary's limit says so (decision field, header, counter). Also the exact stores' defaults
// (registry.js). Stores made here, the chain's own clock; nothing times out on a wall-clock race
// except the 5 ms deadlines, and every assertion is a count.
import { describe, test } from "node:test";
import assert from "node:assert/strict";

import { createFallbackChain } from "../../worker/src/stores/chain.js";
import { resolveStore } from "../../worker/src/stores/registry.js";
// Loaded, so that options may name store "durable" (sluice/stores/durable registers it).
import "../../worker/src/stores/kinds/durable.js";
import { decisionHeaders } from "../../worker/src/http/headers.js";
import { SluiceConfigError } from "../../worker/src/engine/errors.js";

const T0 = 1_700_000_000_000;
const CHECKS = [{ rule: { limit: 10 }, key: "k", cost: 1 }];
const decision = (allowed, store) => ({ allowed, limit: 10, remaining: allowed ? 9 : 0, resetMs: 1000, retryAfterMs: allowed ? 0 : 1000, decidingCheck: 0, checks: [null], store });

// A primary whose calls the test answers by hand (held), and which records the charges taken back.
function heldPrimary({ undoWorks = true } = {}) {
  const store = {
    name: "durable",
    held: [],
    takenBack: [],
    timedOutCalls: 0,
    decide() {
      return new Promise((resolve, reject) => store.held.push({ resolve, reject }));
    },
    timeoutFor: () => 5,
    timedOut() {
      store.timedOutCalls++;
    },
    async takeBack(outcome) {
      store.takenBack.push(outcome);
      return undoWorks ? { undone: 1, missed: 0 } : { undone: 0, missed: 1 };
    },
  };
  return store;
}
const admittingMemory = { name: "memory", decide: () => decision(true, "memory") };

function background() {
  const pending = [];
  return { waitUntil: (p) => pending.push(p), settled: () => Promise.all(pending.splice(0)) };
}

describe("late answers", () => {
  test("the chain denied (failMode closed), the object admitted late: its charge is taken back", async () => {
    const primary = heldPrimary();
    const ctx = background();
    const chain = createFallbackChain({ primary, failMode: "closed", preFilter: false, log: () => {} });
    const answered = await chain.decide(CHECKS, { nowMs: T0, ctx });
    assert.deepEqual([answered.allowed, answered.store, answered.fallback.weakened], [false, "none", false]);
    assert.equal(primary.timedOutCalls, 1, "the store heard its call timed out (its estimator backs off)");
    primary.held[0].resolve(decision(true, "durable"));
    await ctx.settled();
    assert.equal(primary.takenBack.length, 1);
    assert.deepEqual(chain.counters.late, { answered: 1, agreed: 0, undone: 1, undoMissed: 0, admittedUncounted: 0, failed: 0, unanswered: 0 });
  });

  test("a charge that cannot be taken back is counted, not hidden", async () => {
    const primary = heldPrimary({ undoWorks: false });
    const ctx = background();
    const chain = createFallbackChain({ primary, failMode: "closed", preFilter: false, log: () => {} });
    await chain.decide(CHECKS, { nowMs: T0, ctx });
    primary.held[0].resolve(decision(true, "durable"));
    await ctx.settled();
    assert.deepEqual([chain.counters.late.undone, chain.counters.late.undoMissed], [0, 1]);
  });

  test("a weakened fallback admitted, the object denied late: counted as admitted beyond the object's count", async () => {
    const primary = heldPrimary();
    const ctx = background();
    const chain = createFallbackChain({ primary, memory: admittingMemory, preFilter: false, log: () => {} });
    const answered = await chain.decide(CHECKS, { nowMs: T0, ctx });
    assert.deepEqual([answered.allowed, answered.store, answered.fallback.weakened], [true, "memory", true]);
    primary.held[0].resolve(decision(false, "durable"));
    await ctx.settled();
    assert.equal(primary.takenBack.length, 0);
    assert.deepEqual([chain.counters.late.admittedUncounted, chain.counters.weakened.memory], [1, 1]);
  });

  test("both admitted: they agree (one admission, one charge), nothing to undo", async () => {
    const primary = heldPrimary();
    const ctx = background();
    const chain = createFallbackChain({ primary, memory: admittingMemory, preFilter: false, log: () => {} });
    await chain.decide(CHECKS, { nowMs: T0, ctx });
    primary.held[0].resolve(decision(true, "durable"));
    await ctx.settled();
    assert.deepEqual([chain.counters.late.agreed, primary.takenBack.length], [1, 0]);
  });

  test("a late peek charged nothing: nothing is taken back", async () => {
    const primary = heldPrimary();
    const ctx = background();
    const chain = createFallbackChain({ primary, failMode: "closed", preFilter: false, log: () => {} });
    await chain.decide(CHECKS, { nowMs: T0, ctx, peek: true });
    primary.held[0].resolve(decision(true, "durable"));
    await ctx.settled();
    assert.deepEqual([primary.takenBack.length, chain.counters.late.undoMissed, chain.counters.late.agreed], [0, 0, 1]);
  });

  test("a call that never answers is counted unanswered once its late window ends, and fails the breaker then", async () => {
    const primary = heldPrimary();
    const ctx = background();
    const chain = createFallbackChain({ primary, failMode: "closed", lateWindowMs: 5, breaker: { failures: 1, cooldownMs: 60_000 }, preFilter: false, log: () => {} });
    await chain.decide(CHECKS, { nowMs: T0, ctx });
    assert.equal(chain.counters.circuitOpened, 0, "not yet: the call may still answer");
    await ctx.settled();
    assert.deepEqual([chain.counters.late.unanswered, chain.counters.circuitOpened], [1, 1]);
  });

  test("failMode 'open' is a weakened decision; 'closed' is not", async () => {
    const failing = { name: "durable", decide: () => Promise.reject(new Error("down")) };
    const open = createFallbackChain({ primary: failing, failMode: "open", preFilter: false, log: () => {} });
    const closed = createFallbackChain({ primary: failing, failMode: "closed", preFilter: false, log: () => {} });
    const admitted = await open.decide(CHECKS, { nowMs: T0 });
    const denied = await closed.decide(CHECKS, { nowMs: T0 });
    assert.deepEqual([admitted.fallback.weakened, open.counters.weakened.failMode], [true, 1]);
    assert.deepEqual([denied.fallback.weakened, closed.counters.weakened.failMode], [false, 0]);
  });
});

describe("a fallback is visible in the response", () => {
  const rules = [{ name: "r", limit: 10 }];
  const header = (d) => decisionHeaders({ ...d, rules }, "both", '"r";q=10;w=60').find(([name]) => name === "X-RateLimit-Fallback")?.[1];
  test("X-RateLimit-Fallback names who decided instead: a store, or failMode's open / closed", () => {
    const from = { from: "durable", reason: "durable timed out after 300 ms", weakened: true };
    assert.equal(header({ ...decision(true, "memory"), fallback: from }), "memory");
    assert.equal(header({ ...decision(true, "kv"), fallback: from }), "kv");
    assert.equal(header({ ...decision(true, "none"), checks: [null], fallback: from }), "open");
    assert.equal(header({ ...decision(false, "none"), checks: [null], fallback: { ...from, weakened: false } }), "closed");
    assert.equal(header(decision(true, "durable")), undefined, "no header when the store decided");
  });
  test("it carries no reason (a store's error text stays in the logs), and none with headers: 'none'", () => {
    const d = { ...decision(true, "memory"), rules, fallback: { from: "durable", reason: "secret-ish upstream text", weakened: true } };
    assert.ok(decisionHeaders(d, "both", "").every(([, value]) => !value.includes("secret")));
    assert.equal(decisionHeaders(d, "none", "").length, 0);
  });
});

describe("the exact stores' defaults", () => {
  const env = { SLUICE_DO: { idFromName: () => ({}), get: () => ({ decide: () => Promise.reject(new Error("down")) }) } };
  const rule = { id: "d|fixed-window|1|60000|0", name: "d", algorithm: "fixed-window", limit: 1, windowMs: 60_000, burst: 0, keyCapacity: 10 };
  test("store 'durable' with default options: no fallback, failMode closed: an unreachable object denies, weakening nothing", async () => {
    const store = resolveStore({ store: "durable", logIntervalMs: 1 });
    const outcome = await store.decide([{ rule, key: "k", cost: 1 }], { nowMs: T0, env });
    assert.deepEqual([outcome.allowed, outcome.store, outcome.fallback.weakened], [false, "none", false]);
  });
  test("asking for a KV fallback before memory with no KV bound is a SluiceConfigError naming bindings.kv", async () => {
    const store = resolveStore({ store: "durable", fallback: ["kv", "memory"], logIntervalMs: 2 });
    assert.throws(() => store.decide([{ rule, key: "k", cost: 1 }], { nowMs: T0, env }), (e) => e instanceof SluiceConfigError && e.field === "bindings.kv");
    // KV then failMode closed: passing over an unbound KV only denies, and is allowed.
    const strict = resolveStore({ store: "durable", fallback: ["kv"], failMode: "closed", logIntervalMs: 3 });
    const outcome = await strict.decide([{ rule, key: "k", cost: 1 }], { nowMs: T0, env });
    assert.deepEqual([outcome.allowed, outcome.store], [false, "none"]);
  });
});
