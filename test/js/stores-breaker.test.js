// The fallback chain's circuit breaker (worker/src/stores/breaker.js): a primary store that keeps
// failing is skipped for a cooldown instead of making every request wait for it, then probed by one
// request. Driven with stores made here and the chain's own clock (nowMs), so nothing waits.
import { test } from "node:test";
import assert from "node:assert/strict";

import { createFallbackChain } from "../../worker/src/stores/chain.js";
import { SluiceConfigError } from "../../worker/src/engine/errors.js";

const T0 = 1_700_000_000_000;
const CHECKS = [{ rule: { limit: 10 }, key: "k", cost: 1 }];
const ADMIT = { allowed: true, limit: 10, remaining: 9, resetMs: 1000, retryAfterMs: 0, decidingCheck: 0, checks: [null] };

// A primary whose behaviour the test switches: "fail" throws, "answer" admits, "hold" returns a
// promise the test settles. `calls` counts every decide.
function primaryStore() {
  const store = {
    name: "durable",
    mode: "fail",
    calls: 0,
    held: [],
    decide() {
      store.calls++;
      if (store.mode === "fail") throw new Error("object unreachable");
      if (store.mode === "hold") return new Promise((resolve, reject) => store.held.push({ resolve, reject }));
      return { ...ADMIT, store: "durable" };
    },
  };
  return store;
}
const memoryStore = { name: "memory", decide: () => ({ ...ADMIT, store: "memory" }) };

function chainOver(primary, options = {}) {
  return createFallbackChain({ primary, memory: memoryStore, preFilter: false, log: () => {}, timeoutMs: 1000, ...options });
}

test("after 5 failures in a row the primary is skipped, and each skip is counted and explained", async () => {
  const primary = primaryStore();
  const chain = chainOver(primary);
  for (let i = 0; i < 5; i++) {
    const outcome = await chain.decide(CHECKS, { nowMs: T0 + i });
    assert.equal(outcome.store, "memory");
    assert.match(outcome.fallback.reason, /durable failed: object unreachable/);
  }
  assert.equal(primary.calls, 5);
  assert.equal(chain.counters.circuitOpened, 1);
  for (let i = 0; i < 20; i++) {
    const outcome = await chain.decide(CHECKS, { nowMs: T0 + 100 + i });
    assert.equal(outcome.store, "memory");
    assert.match(outcome.fallback.reason, /^durable skipped: circuit open after 5 failures in a row/);
  }
  assert.equal(primary.calls, 5, "no request asked the primary while the breaker was open");
  assert.equal(chain.counters.circuitSkipped, 20);
  assert.equal(chain.counters.fallbacks, 25);
  assert.equal(chain.counters.errors.durable, 5);
  assert.equal(chain.counters.decided.memory, 25);
});

test("after the cooldown one request probes; an answer closes the breaker", async () => {
  const primary = primaryStore();
  const chain = chainOver(primary, { breaker: { failures: 2, cooldownMs: 1000 } });
  await chain.decide(CHECKS, { nowMs: T0 });
  await chain.decide(CHECKS, { nowMs: T0 });
  assert.equal((await chain.decide(CHECKS, { nowMs: T0 + 999 })).store, "memory");
  assert.equal(primary.calls, 2);

  primary.mode = "hold";
  const probe = chain.decide(CHECKS, { nowMs: T0 + 1000 });
  assert.equal(primary.calls, 3, "the first request after the cooldown probes the primary");
  // While the probe is out, others still skip it rather than pile onto a store that may be down.
  assert.equal((await chain.decide(CHECKS, { nowMs: T0 + 1001 })).store, "memory");
  assert.equal(primary.calls, 3);
  primary.held[0].resolve({ ...ADMIT, store: "durable" });
  assert.equal((await probe).store, "durable");

  primary.mode = "answer";
  for (let i = 0; i < 3; i++) assert.equal((await chain.decide(CHECKS, { nowMs: T0 + 1002 + i })).store, "durable");
  assert.equal(primary.calls, 6);
  assert.equal(chain.counters.circuitOpened, 1);
});

test("a failed probe opens the breaker for another cooldown", async () => {
  const primary = primaryStore();
  const chain = chainOver(primary, { breaker: { failures: 3, cooldownMs: 500 } });
  for (let i = 0; i < 3; i++) await chain.decide(CHECKS, { nowMs: T0 });
  await chain.decide(CHECKS, { nowMs: T0 + 500 }); // the probe, failing
  assert.equal(primary.calls, 4);
  assert.equal(chain.counters.circuitOpened, 2);
  await chain.decide(CHECKS, { nowMs: T0 + 999 });
  assert.equal(primary.calls, 4, "skipped until the second cooldown ends");
  primary.mode = "answer";
  assert.equal((await chain.decide(CHECKS, { nowMs: T0 + 1000 })).store, "durable");
});

// A context whose waitUntil collects the chain's background work, so a test can wait for it to end.
function backgroundContext() {
  const pending = [];
  return { waitUntil: (promise) => pending.push(promise), settled: () => Promise.all(pending.splice(0)) };
}

test("calls that never answer count as failures once their late window ends; a success in between starts the count again", async () => {
  const primary = primaryStore();
  const ctx = backgroundContext();
  const chain = chainOver(primary, { timeoutMs: 5, lateWindowMs: 5, breaker: { failures: 3, cooldownMs: 60_000 } });
  primary.mode = "hold";
  await chain.decide(CHECKS, { nowMs: T0, ctx });
  await chain.decide(CHECKS, { nowMs: T0, ctx });
  await ctx.settled();
  primary.mode = "answer";
  assert.equal((await chain.decide(CHECKS, { nowMs: T0, ctx })).store, "durable");
  primary.mode = "hold";
  await chain.decide(CHECKS, { nowMs: T0, ctx });
  await chain.decide(CHECKS, { nowMs: T0, ctx });
  await ctx.settled();
  assert.equal(chain.counters.circuitOpened, 0, "two failures, a success, two failures: never three in a row");
  await chain.decide(CHECKS, { nowMs: T0, ctx });
  await ctx.settled();
  assert.equal(chain.counters.circuitOpened, 1);
  assert.equal(chain.counters.timeouts.durable, 5);
  assert.equal(chain.counters.late.unanswered, 5);
  const calls = primary.calls;
  assert.equal((await chain.decide(CHECKS, { nowMs: T0 + 1 })).store, "memory");
  assert.equal(primary.calls, calls);
});

test("a slow answer is not a failure: timeouts whose calls answer late never open the breaker", async () => {
  const primary = primaryStore();
  const ctx = backgroundContext();
  const chain = chainOver(primary, { timeoutMs: 5, breaker: { failures: 2, cooldownMs: 60_000 } });
  primary.mode = "hold";
  for (let i = 0; i < 4; i++) {
    assert.equal((await chain.decide(CHECKS, { nowMs: T0, ctx })).store, "memory");
    primary.held.shift().resolve({ ...ADMIT, store: "durable" });
  }
  await ctx.settled();
  assert.equal(chain.counters.timeouts.durable, 4);
  assert.equal(chain.counters.circuitOpened, 0);
  // The memory fallback admitted and so did the object, late: they agree, nothing to reconcile.
  assert.deepEqual([chain.counters.late.answered, chain.counters.late.agreed], [4, 4]);
});

test("calls made before the breaker opened that fail late neither reopen it nor extend its cooldown", async () => {
  const primary = primaryStore();
  const chain = chainOver(primary, { breaker: { failures: 2, cooldownMs: 1000 } });
  primary.mode = "hold";
  const slow = chain.decide(CHECKS, { nowMs: T0 });
  primary.mode = "fail";
  await chain.decide(CHECKS, { nowMs: T0 + 10 });
  await chain.decide(CHECKS, { nowMs: T0 + 20 }); // opens until T0 + 1020
  primary.held[0].reject(new Error("late"));
  await slow;
  assert.equal(chain.counters.circuitOpened, 1);
  primary.mode = "answer";
  assert.equal((await chain.decide(CHECKS, { nowMs: T0 + 1020 })).store, "durable");
});

test("breaker: false asks the primary every time", async () => {
  const primary = primaryStore();
  const chain = chainOver(primary, { breaker: false });
  for (let i = 0; i < 20; i++) await chain.decide(CHECKS, { nowMs: T0 });
  assert.equal(primary.calls, 20);
  assert.equal(chain.counters.circuitSkipped, 0);
});

test("bad breaker settings fail at start-up, naming the field", () => {
  const cases = [
    ["on", "breaker"],
    [null, "breaker"],
    [[5], "breaker"],
    [{ failures: 0 }, "breaker.failures"],
    [{ failures: 2.5 }, "breaker.failures"],
    [{ cooldownMs: 0 }, "breaker.cooldownMs"],
    [{ cooldownMs: Infinity }, "breaker.cooldownMs"],
    [{ cooldownMs: "10s" }, "breaker.cooldownMs"],
    [{ failure: 5 }, "breaker.failure"],
  ];
  for (const [breaker, field] of cases) {
    assert.throws(
      () => chainOver(primaryStore(), { breaker }),
      (error) => error instanceof SluiceConfigError && error.field === field,
      `breaker ${JSON.stringify(breaker)} should name ${field}`,
    );
  }
});

test("the KV fallback has its own breaker: with the primary's open and KV down, requests stop waiting for KV", async () => {
  const primary = primaryStore();
  const kv = { name: "kv", calls: 0, decide() { kv.calls++; throw new Error("kv unreachable"); } };
  const chain = chainOver(primary, { kv });
  for (let i = 0; i < 5; i++) await chain.decide(CHECKS, { nowMs: T0 + i });
  assert.equal(kv.calls, 5);
  assert.equal(chain.counters.circuitOpenedBy.durable, 1);
  assert.equal(chain.counters.circuitOpenedBy.kv, 1);
  for (let i = 0; i < 20; i++) {
    const outcome = await chain.decide(CHECKS, { nowMs: T0 + 100 + i });
    assert.equal(outcome.store, "memory");
    assert.match(outcome.fallback.reason, /durable skipped: circuit open.*; kv skipped: circuit open after 5 failures in a row/);
  }
  assert.equal(kv.calls, 5, "no request asked KV while its breaker was open");
  assert.equal(chain.counters.circuitSkippedBy.kv, 20);
  assert.equal(chain.counters.circuitSkippedBy.durable, 20);
  assert.equal(chain.counters.decided.memory, 25);

  // After the cooldown, one request probes each store; a KV that answers again closes its breaker.
  kv.decide = () => { kv.calls++; return { ...ADMIT, store: "kv" }; };
  const probe = await chain.decide(CHECKS, { nowMs: T0 + 100 + 10_000 });
  assert.equal(probe.store, "kv");
  assert.equal(kv.calls, 6);
  const next = await chain.decide(CHECKS, { nowMs: T0 + 100 + 10_001 });
  assert.equal(next.store, "kv", "KV's breaker closed; the primary's stays open until its probe answers");
});

test("a request's worst-case wait: one timeoutMs per store its breaker lets it ask", async () => {
  // Stores that never answer: the chain's deadline (timeoutMs) ends each wait. Two of them: the
  // request waits two timeouts, then the memory store decides at once; then the breakers open.
  const never = (name) => ({ name, calls: 0, decide() { this.calls++; return new Promise(() => {}); } });
  const primary = never("durable");
  const kv = never("kv");
  const ctx = backgroundContext();
  const chain = chainOver(primary, { kv, timeoutMs: 5, lateWindowMs: 5, breaker: { failures: 1, cooldownMs: 60_000 } });
  const outcome = await chain.decide(CHECKS, { nowMs: T0, ctx });
  assert.equal(outcome.store, "memory");
  assert.match(outcome.fallback.reason, /durable timed out after 5 ms; kv timed out after 5 ms/);
  // The primary's breaker opens when its call is given up on (the late window); the fallback's at once.
  await ctx.settled();
  const skipped = await chain.decide(CHECKS, { nowMs: T0 + 1 });
  assert.match(skipped.fallback.reason, /durable skipped.*kv skipped/);
  assert.equal(primary.calls + kv.calls, 2, "the second request asked neither");
});
