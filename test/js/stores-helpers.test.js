// The stores' small parts that run without a Worker: the pre-filter's bounded memory of denials, the
// throttled log, the deadline.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { DenialCache } from "../../worker/src/stores/denial-cache.js";
import { createThrottledLog } from "../../worker/src/stores/throttled-log.js";
import { DeadlineError, withDeadline } from "../../worker/src/stores/deadline.js";

const RULE = { id: "r|fixed-window|2|60000|0", limit: 2 };
const check = (key, cost = 1) => ({ rule: RULE, key, cost });
const denied = (retryAfterMs, resetMs = retryAfterMs) => ({
  allowed: false,
  store: "durable",
  checks: [{ allowed: false, limit: 2, remaining: 0, resetMs, retryAfterMs }],
});

describe("DenialCache", () => {
  test("denies until the retry time, moving the durations forward", () => {
    const cache = new DenialCache(10);
    cache.remember([check("a")], denied(30_000), 1000);
    const table = [
      // [nowMs, denied?, retryAfterMs]
      [1000, true, 30_000],
      [21_000, true, 10_000],
      [30_999, true, 1],
      [31_000, false, null],
      [1000, false, null], // forgotten once expired
    ];
    table.forEach(([nowMs, isDenied, retryAfterMs], step) => {
      const outcome = cache.lookup([check("a")], nowMs);
      assert.equal(outcome !== null, isDenied, `step ${step}`);
      if (isDenied) assert.equal(outcome.retryAfterMs, retryAfterMs, `step ${step}`);
    });
  });

  test("a block's denial is answered from memory for at most BLOCK_RECHECK_MS, with the store's retry time, so a lift elsewhere reaches this isolate", async () => {
    const { BLOCK_RECHECK_MS } = await import("../../worker/src/stores/denial-cache.js");
    const BLOCKING = { id: "s|sliding-log|3|60000|0", limit: 3, blockMs: 3_600_000 };
    const cache = new DenialCache(10);
    cache.remember([{ rule: BLOCKING, key: "a", cost: 1 }], denied(3_600_000), 0);
    cache.remember([check("b")], denied(3_600_000), 0);
    // Still denied just before the recheck, telling the block's true end.
    assert.equal(cache.lookup([{ rule: BLOCKING, key: "a", cost: 1 }], BLOCK_RECHECK_MS - 1).retryAfterMs, 3_600_000 - BLOCK_RECHECK_MS + 1);
    // Then the store is asked again (it may have been lifted); a throttling rule's denial stays to its retry time.
    assert.equal(cache.lookup([{ rule: BLOCKING, key: "a", cost: 1 }], BLOCK_RECHECK_MS), null);
    assert.equal(cache.lookup([check("b")], BLOCK_RECHECK_MS).allowed, false);
  });

  test("only denies requests at least as costly as the one denied", () => {
    const cache = new DenialCache(10);
    cache.remember([check("a", 3)], denied(5000), 0);
    assert.equal(cache.lookup([check("a", 2)], 1), null);
    assert.equal(cache.lookup([check("a", 3)], 1).allowed, false);
  });

  test("reports the deciding check and leaves the others unconsulted", () => {
    const cache = new DenialCache(10);
    cache.remember([check("a")], denied(5000), 0);
    const outcome = cache.lookup([check("b"), check("a")], 0);
    assert.deepEqual([outcome.decidingCheck, outcome.checks[0], outcome.checks[1].allowed, outcome.preFiltered], [1, null, false, true]);
  });

  test("never caches what waiting cannot lift, nor admissions", () => {
    const cache = new DenialCache(10);
    cache.remember([check("a")], denied(Infinity), 0);
    cache.remember([check("b")], { allowed: true, store: "durable", checks: [{ allowed: true, retryAfterMs: 0 }] }, 0);
    assert.equal(cache.size, 0);
  });

  test("stays within maxKeys however many keys are denied", () => {
    const cache = new DenialCache(100);
    for (let i = 0; i < 10_000; i++) cache.remember([check(`flood-${i}`)], denied(60_000), i);
    assert.equal(cache.size, 100);
    assert.notEqual(cache.lookup([check("flood-9999")], 10_000), null, "the newest are kept");
    assert.equal(cache.lookup([check("flood-0")], 10_000), null);
  });
});

describe("createThrottledLog", () => {
  test("logs the first report, folds the rest of the interval into the next line", () => {
    const lines = [];
    const report = createThrottledLog((line) => lines.push(line), 1000);
    for (const nowMs of [0, 10, 999, 1000, 1500, 5000]) report(nowMs, "x failed");
    assert.deepEqual(lines, ["sluice: x failed", "sluice: x failed (3 times since the last report)", "sluice: x failed (2 times since the last report)"]);
  });
});

describe("withDeadline", () => {
  test("passes plain values through and settles like the work", async () => {
    assert.equal(withDeadline(7, 10, "x"), 7);
    assert.equal(await withDeadline(Promise.resolve(8), 1000, "x"), 8);
    const thenable = { then: (resolve) => resolve(9) }; // what an RPC call returns is not a Promise
    assert.equal(await withDeadline(thenable, 1000, "x"), 9);
    await assert.rejects(withDeadline(Promise.reject(new Error("boom")), 1000, "x"), /boom/);
  });

  test("rejects with DeadlineError when the work outlasts the timeout", async () => {
    const never = new Promise(() => {});
    await assert.rejects(withDeadline(never, 5, "the object"), (error) => {
      assert.ok(error instanceof DeadlineError);
      assert.equal(error.message, "the object did not answer within 5 ms");
      return true;
    });
  });
});
