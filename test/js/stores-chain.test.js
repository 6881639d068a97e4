// The fallback chain: the Durable Object decides; when it throws, hangs or restarts, KV or the
// isolate's memory does, and failMode when nothing can. Every fallback is counted and logged at most
// once per interval; the local pre-filter answers repeat offenders without a round trip.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { T0, rule, startStores } from "./fixtures/stores/harness.js";

const HOUR = 3_600_000;
// Generous where a store must answer (a loaded machine must not turn a healthy call into a fallback);
// short where a store is made to hang (3 s) and the timeout is what is tested.
const HEALTHY_TIMEOUT_MS = 2000;
const HANG_TIMEOUT_MS = 150;

// A chain over its own Durable Object (named `name`/1/0), KV prefix and memory store.
function chain(name, { kv = true, memory = "memory", ...options } = {}) {
  return {
    kind: "chain",
    primary: { kind: "durable", options: { name } },
    kv: kv ? { kind: "kv", options: { prefix: `${name}:` } } : null,
    memory: memory ? { kind: memory } : null,
    options: { timeoutMs: HEALTHY_TIMEOUT_MS, ...options },
  };
}

describe("fallback chain", () => {
  let stores;
  let send;
  before(async () => {
    stores = await startStores({ isolates: 1 });
    send = stores.send;
  });
  after(() => stores.dispose());

  const object = (name, method, ...args) => send(0, { op: "object", name: `${name}/1/0`, method, args });
  async function decide(store, checks, nowMs) {
    return send(0, { op: "decide", store, checks, nowMs });
  }
  async function prepare(name, fault = null) {
    await object(name, "setKnob", "clock", T0);
    await object(name, "setKnob", "fault", fault);
  }

  test("a healthy Durable Object decides, with no fallback", async () => {
    await prepare("healthy");
    const r = rule({ name: "healthy", limit: 2, windowMs: HOUR });
    const { outcome, counters } = await decide(chain("healthy"), [{ rule: r, key: "u", cost: 1 }], T0);
    assert.equal(outcome.store, "durable");
    assert.equal(outcome.fallback, undefined);
    assert.deepEqual(counters.decided, { durable: 1, kv: 0, memory: 0, failMode: 0 });
    assert.equal(counters.fallbacks, 0);
  });

  test("a throwing Durable Object: KV decides and says why", async () => {
    await prepare("throws", "throw");
    const r = rule({ name: "throws", limit: 2, windowMs: HOUR });
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await decide(chain("throws"), [{ rule: r, key: "u", cost: 1 }], T0 + i));
    const last = results[2];
    assert.deepEqual(results.map((x) => [x.outcome.store, x.outcome.allowed]), [["kv", true], ["kv", true], ["kv", false]]);
    assert.deepEqual(last.outcome.fallback, { from: "durable", reason: "durable failed: injected Durable Object failure", weakened: true });
    assert.deepEqual([last.counters.errors.durable, last.counters.fallbacks, last.counters.decided.kv], [3, 3, 3]);
  });

  test("a hanging Durable Object: the next store decides once the timeout passes", async () => {
    await prepare("hangs", "hang");
    const r = rule({ name: "hangs", limit: 2, windowMs: HOUR });
    const { outcome, counters } = await decide(chain("hangs", { kv: false, timeoutMs: HANG_TIMEOUT_MS }), [{ rule: r, key: "u", cost: 1 }], T0);
    assert.equal(outcome.store, "memory");
    assert.deepEqual(outcome.fallback, { from: "durable", reason: `durable timed out after ${HANG_TIMEOUT_MS} ms`, weakened: true });
    assert.deepEqual([counters.timeouts.durable, counters.errors.durable], [1, 0]);
    await object("hangs", "setKnob", "fault", null);
  });

  test("Durable Object and KV failing: memory decides; the reason names both", async () => {
    await prepare("both", "throw");
    const r = rule({ name: "both", limit: 1, windowMs: HOUR });
    try {
      await send(0, { op: "kvFault", fault: "throw" });
      const first = await decide(chain("both"), [{ rule: r, key: "u", cost: 1 }], T0);
      const second = await decide(chain("both"), [{ rule: r, key: "u", cost: 1 }], T0 + 1);
      assert.deepEqual([first.outcome.store, first.outcome.allowed, second.outcome.allowed], ["memory", true, false]);
      assert.equal(first.outcome.fallback.reason, "durable failed: injected Durable Object failure; kv failed: injected KV read failure");
      assert.deepEqual(second.counters.errors, { durable: 2, kv: 2, memory: 0 });
    } finally {
      await send(0, { op: "kvFault", fault: null });
    }
  });

  for (const failMode of ["open", "closed"]) {
    test(`no store can answer: failMode "${failMode}" decides, and the isolate keeps serving`, async () => {
      const name = `nothing-${failMode}`;
      await prepare(name, "throw");
      const r = rule({ name, limit: 5, windowMs: HOUR });
      const check = [{ rule: r, key: "u", cost: 1 }];
      try {
        await send(0, { op: "kvFault", fault: "hang" });
        const broken = await decide(chain(name, { memory: "broken", failMode, timeoutMs: HANG_TIMEOUT_MS }), check, T0);
        const absent = await decide(chain(name, { kv: false, memory: null, failMode }), check, T0);
        for (const { outcome } of [broken, absent]) {
          assert.deepEqual(
            [outcome.allowed, outcome.store, outcome.retryAfterMs, outcome.limit],
            [failMode === "open", "none", failMode === "open" ? 0 : 1000, 5],
          );
          assert.match(outcome.fallback.reason, new RegExp(`failing ${failMode}$`));
        }
        assert.equal(
          broken.outcome.fallback.reason,
          `durable failed: injected Durable Object failure; kv timed out after ${HANG_TIMEOUT_MS} ms; memory failed: memory store broke; failing ${failMode}`,
        );
        assert.deepEqual([broken.counters.decided.failMode, broken.counters.timeouts.kv, broken.counters.errors.memory], [1, 1, 1]);
      } finally {
        await send(0, { op: "kvFault", fault: null });
        await object(name, "setKnob", "fault", null);
      }
      const healthy = await decide(chain(name), check, T0);
      assert.deepEqual([healthy.outcome.store, healthy.outcome.allowed], ["durable", true]);
    });
  }

  test("a restarted Durable Object: the call in flight falls back, the next one finds every count", async () => {
    await prepare("restarts");
    const r = rule({ name: "restarts", limit: 3, windowMs: HOUR });
    const store = chain("restarts");
    const check = [{ rule: r, key: "u", cost: 1 }];
    await decide(store, check, T0);
    await decide(store, check, T0 + 1);
    const restart = object("restarts", "restart").then(
      () => "not restarted",
      (error) => error.message,
    );
    const during = await decide(store, check, T0 + 2);
    assert.match(await restart, /test restart/);
    const next = await decide(store, check, T0 + 3);
    assert.ok(["durable", "kv"].includes(during.outcome.store));
    assert.equal(next.outcome.store, "durable");
    // Two charges before the restart survive it; the third is the one during it if the object took it.
    const thirdTaken = during.outcome.store === "durable";
    assert.deepEqual([next.outcome.allowed, next.outcome.remaining], [!thirdTaken, 0]);
  });

  test("the pre-filter denies a key the Durable Object denied, without a round trip, until its retry time", async () => {
    await prepare("prefilter");
    const r = rule({ name: "prefilter", limit: 2, windowMs: 60_000 });
    const store = chain("prefilter");
    const check = [{ rule: r, key: "u", cost: 1 }];
    for (let i = 0; i < 3; i++) await decide(store, check, T0);
    const calls = await object("prefilter", "decideCalls");
    const cached = await decide(store, check, T0 + 20_000);
    assert.deepEqual(
      [cached.outcome.allowed, cached.outcome.store, cached.outcome.preFiltered, cached.outcome.retryAfterMs],
      [false, "durable", true, 40_000],
    );
    assert.equal(cached.counters.preFiltered, 1);
    // A cheaper request may fit, a different key is not affected: both go to the object.
    await decide(store, [{ rule: r, key: "other", cost: 1 }], T0 + 20_000);
    assert.equal(await object("prefilter", "decideCalls"), calls + 1);
    // Once the retry time has passed, the object is asked again.
    await object("prefilter", "setKnob", "clock", T0 + 60_000);
    const later = await decide(store, check, T0 + 60_000);
    assert.deepEqual([later.outcome.allowed, later.outcome.preFiltered], [true, undefined]);
    assert.equal(await object("prefilter", "decideCalls"), calls + 2);
  });

  test("fallbacks are logged at most once per interval, with how many were folded in", async () => {
    await prepare("logs", "throw");
    const r = rule({ name: "logs", limit: 100, windowMs: HOUR });
    const store = chain("logs", { logIntervalMs: 10_000 });
    for (let i = 0; i < 5; i++) await decide(store, [{ rule: r, key: "u", cost: 1 }], T0 + i);
    const quiet = await send(0, { op: "log", store });
    assert.deepEqual(quiet, ["sluice: durable failed: injected Durable Object failure; decided by kv"]);
    const { counters } = await decide(store, [{ rule: r, key: "u", cost: 1 }], T0 + 10_000);
    // The fifth failure in a row opened the breaker, so the sixth request skipped the object: the line
    // carries the latest reason.
    assert.deepEqual(await send(0, { op: "log", store }), [
      "sluice: durable skipped: circuit open after 5 failures in a row; decided by kv (5 times since the last report)",
    ]);
    assert.equal(counters.fallbacks, 6);
    assert.deepEqual([counters.errors.durable, counters.circuitOpened, counters.circuitSkipped], [5, 1, 1]);
  });

  test("invalid configuration throws at construction, naming the field", async () => {
    const tryBuild = (overrides) => send(0, { op: "tryBuild", store: { ...chain("config"), ...overrides } });
    assert.match(await tryBuild({ options: { failMode: "maybe" } }), /^SluiceConfigError: sluice: failMode must be "open" or "closed"; got "maybe"$/);
    assert.match(await tryBuild({ options: { timeoutMs: 0 } }), /^SluiceConfigError: sluice: timeoutMs must be a positive/);
    assert.match(await tryBuild({ options: { preFilter: "yes" } }), /^SluiceConfigError: sluice: preFilter /);
    assert.match(await tryBuild({ options: { preFilterMaxKeys: 0 } }), /^SluiceConfigError: sluice: preFilterMaxKeys /);
    assert.match(await tryBuild({ options: { failClosedRetryAfterMs: -1 } }), /^SluiceConfigError: sluice: failClosedRetryAfterMs /);
    assert.match(await tryBuild({ options: { logIntervalMs: "often" } }), /^SluiceConfigError: sluice: logIntervalMs /);
    assert.match(await tryBuild({ options: { breaker: { failures: 0 } } }), /^SluiceConfigError: sluice: breaker\.failures /);
    assert.equal(await tryBuild({}), "built");
  });
});
