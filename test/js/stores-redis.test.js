// The Redis store across isolates: four Miniflare workers (each its own globalThis, its own cache of
// states and its own clock offset) reach one real redis-server through the Upstash REST bridge
// (helpers/redis-bridge.js). Exactness under concurrent bursts for every algorithm, clock skew, and
// Redis going away.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { rule, startStores } from "./fixtures/stores/harness.js";
import { startBridge } from "./helpers/redis-bridge.js";
import { freePort, startRedis } from "./helpers/redis-server.js";
import { ALGORITHMS } from "../../wasm-bindings/sluice.js";

const ISOLATES = 4;
const LIMIT = 10;
const REQUESTS = 60; // 15 per isolate, all at once: more than the limit on each
const HOUR = 3_600_000;
const TOKEN = "test-token-7f3a9c";
// Generous: a loaded machine must not turn a healthy call into a fallback.
const HEALTHY_TIMEOUT_MS = 5000;

describe("Redis store across isolates", () => {
  let redis;
  let bridge;
  let stores;
  before(async () => {
    redis = await startRedis();
    bridge = await startBridge({ redisPort: redis.port, token: TOKEN });
    const deadPort = await freePort([redis.port, bridge.port]); // nothing listens there
    stores = await startStores({
      isolates: ISOLATES,
      bindings: {
        UPSTASH_REDIS_REST_URL: bridge.url,
        UPSTASH_REDIS_REST_TOKEN: TOKEN,
        DEAD_REDIS_URL: `http://127.0.0.1:${deadPort}`,
      },
    });
  });
  after(async () => {
    await stores?.dispose();
    await bridge?.stop();
    await redis?.stop();
  });

  // A wide clock tolerance: a slow first request on a loaded machine must not count as a refusal.
  const redisStore = (prefix, options = {}) => ({
    kind: "redis",
    options: { prefix, timeoutMs: HEALTHY_TIMEOUT_MS, clockToleranceMs: 2000, ...options },
  });
  const send = (isolate, command) => stores.send(isolate, command);

  // With the library's default options: store: "redis" as a limiter's options build it (its chain,
  // breaker, fallback to memory and learnt timeouts), nothing but the URL and token given.
  for (const algorithm of ALGORITHMS) {
    test(`${algorithm}: a burst over ${ISOLATES} isolates admits the limit and never more, with default options, about one call per batch`, async () => {
      const checks = [{ rule: rule({ name: `burst-${algorithm}`, algorithm, limit: LIMIT, windowMs: HOUR }), key: "client", cost: 1 }];
      const store = { kind: "resolved", options: { store: "redis" } };
      const requestsBefore = bridge.requests;
      const results = await Promise.all(
        Array.from({ length: REQUESTS }, (_, i) => send(i % ISOLATES, { op: "decide", store, checks, nowMs: Date.now() })),
      );
      const roundTrips = bridge.requests - requestsBefore;
      const admitted = results.filter((r) => r.outcome.allowed).length;
      // Never beyond the limit; short of it only by visible fail-closed denials (a call given up on a
      // host too loaded to answer in time: the default for an exact store is to deny, not to guess).
      const failedClosed = results.filter((r) => r.outcome.store !== "redis");
      assert.ok(admitted <= LIMIT, `${admitted} admitted of ${LIMIT}`);
      assert.ok(admitted + failedClosed.length >= LIMIT, `${admitted} admitted and ${failedClosed.length} fail-closed denials`);
      assert.ok(failedClosed.every((r) => r.outcome.allowed === false && r.outcome.fallback !== undefined));
      // Requests queued in an isolate go together: far fewer calls than requests (one by one, racing
      // by compare-and-set: ~2.9 each; appended to a contended key's log: one each).
      assert.ok(roundTrips <= 1.2 * REQUESTS, `${roundTrips} round trips for ${REQUESTS} decisions`);
      // Every isolate's remaining count agrees afterwards: nothing left.
      for (let i = 0; i < ISOLATES; i++) {
        const peek = await send(i, { op: "decide", store, checks, nowMs: Date.now(), peek: true });
        assert.equal(peek.outcome.allowed, false, `isolate w${i} would still admit`);
      }
    });
  }

  test("Upstash in another region (250 ms +-20 %): a burst over 4 isolates is exact with default options", async () => {
    // The chain's and the store's defaults; only the fetch goes through the geography seam.
    const checks = [{ rule: rule({ name: "far-burst", limit: LIMIT, windowMs: HOUR }), key: "client", cost: 1 }];
    const storeOf = (isolate) => ({
      kind: "chain",
      primary: { kind: "redis", options: { prefix: "far:", region: { name: `far-${isolate}`, rttMs: 250, jitter: 0.2, seed: isolate + 1 } } },
      options: { failMode: "closed" }, // store: "redis"'s defaults: no fallback, deny when Redis cannot answer
    });
    const results = await Promise.all(
      Array.from({ length: REQUESTS }, (_, i) => send(i % ISOLATES, { op: "decide", store: storeOf(i % ISOLATES), checks, nowMs: Date.now() })),
    );
    assert.equal(results.filter((r) => r.outcome.allowed).length, LIMIT);
    assert.deepEqual(results.filter((r) => r.outcome.store !== "redis").map((r) => r.outcome.fallback), []);
    // The learnt timeouts held a 250 ms +-20 % round trip: no call was given up.
    const counters = await Promise.all(Array.from({ length: ISOLATES }, (_, i) => send(i, { op: "counters", store: storeOf(i).primary })));
    assert.equal(counters.reduce((sum, c) => sum + c.givenUp, 0), 0);
    assert.equal(counters.reduce((sum, c) => sum + c.decisions, 0), REQUESTS);
  });

  test("store: 'redis', lease: true over 4 isolates: never beyond the limit, and most decisions from leases", async () => {
    const checks = [{ rule: rule({ name: "leased", limit: 50, windowMs: HOUR }), key: "client", cost: 1 }];
    const store = { kind: "resolved", options: { store: "redis", lease: true } };
    const requestsBefore = bridge.requests;
    const outcomes = [];
    for (let i = 0; i < 160; i++) outcomes.push((await send(i % ISOLATES, { op: "decide", store, checks, nowMs: Date.now() })).outcome);
    const admitted = outcomes.filter((o) => o.allowed).length;
    assert.ok(admitted <= 50 && admitted >= 45, `${admitted} admitted of 50`);
    assert.ok(outcomes.every((o) => o.store === "redis"));
    const leased = outcomes.filter((o) => o.lease === true).length;
    assert.ok(leased >= admitted / 2, `${leased} of ${admitted} admissions from leases`);
    // The denials past the limit are answered from each isolate's memory of Redis's denial (preFilter).
    // At most half a round trip per decision (without leases: about one, each isolate appending to the key's log).
    assert.ok(bridge.requests - requestsBefore <= 80, `${bridge.requests - requestsBefore} round trips for 160 decisions`);
    console.log(`leased: ${admitted} admitted of 50, ${leased} from leases, ${bridge.requests - requestsBefore} round trips for 160 decisions`);
  });

  test("a call given up on in workerd: its batch falls back, nothing hangs, and its late answer is read", async () => {
    const checks = [{ rule: rule({ name: "given-up", limit: LIMIT, windowMs: HOUR }), key: "client", cost: 1 }];
    // The first call is answered 3 s late; the store gives it up after 500 ms (its first timeout).
    const primary = { kind: "redis", options: { prefix: "given-up:", roundTrip: { initialTimeoutMs: 500 }, region: { name: "late", rttMs: 10, lateMs: 3000, script: ["late"] } } };
    const store = { kind: "chain", primary, memory: { kind: "memory" }, options: {} };
    const results = await Promise.all(Array.from({ length: 5 }, () => send(0, { op: "decide", store, checks, nowMs: Date.now() })));
    // The given-up call's requests fell back (at least the first); those that queued behind it went in
    // the next call, which Redis answered.
    const byMemory = results.filter((r) => r.outcome.store === "memory").length;
    let counters = await send(0, { op: "counters", store: primary });
    assert.ok(byMemory >= 1);
    assert.equal(results.filter((r) => r.outcome.store === "redis").length, 5 - byMemory);
    assert.equal(counters.decisions, 5 - byMemory);
    assert.equal(counters.givenUp, 1);
    for (let i = 0; i < 300 && counters.lateAnswered === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      counters = await send(0, { op: "counters", store: primary });
    }
    assert.equal(counters.lateAnswered, 1, "the late answer was read");
    // The next decision is Redis's again, on the state the late call left.
    const next = await send(0, { op: "decide", store, checks, nowMs: Date.now() });
    assert.equal(next.outcome.store, "redis");
  });

  test("sustained contention on one key from 4 isolates: every decision is Redis's, counted once", async () => {
    // Every decision admits and writes, so every isolate races the others for the key on every call.
    const BIG = 1_000_000;
    const PER_ISOLATE = 40;
    const checks = [{ rule: rule({ name: "contention", limit: BIG, windowMs: HOUR }), key: "hot", cost: 1 }];
    // Few attempts: a loser must not need many (a one-key batch on a changed key goes in its log).
    const store = redisStore("contention:", { maxAttempts: 4 });
    const lanes = await Promise.all(
      Array.from({ length: ISOLATES }, async (_, isolate) => {
        const outcomes = [];
        for (let i = 0; i < PER_ISOLATE; i++) outcomes.push((await send(isolate, { op: "decide", store, checks, nowMs: Date.now() })).outcome);
        return outcomes;
      }),
    );
    const all = lanes.flat();
    assert.ok(all.every((o) => o.store === "redis" && o.allowed));
    // The last admitted left BIG - 160; a peek reports what one more would leave.
    assert.equal(Math.min(...all.map((o) => o.remaining)), BIG - ISOLATES * PER_ISOLATE);
    const peek = await send(0, { op: "decide", store, checks, nowMs: Date.now(), peek: true });
    assert.equal(peek.outcome.remaining, BIG - ISOLATES * PER_ISOLATE - 1);
    // Each admitted decision saw a different remaining count: no two decided on the same state.
    assert.equal(new Set(all.map((o) => o.remaining)).size, all.length);
    const counters = await Promise.all(Array.from({ length: ISOLATES }, (_, i) => send(i, { op: "counters", store })));
    assert.equal(counters.reduce((sum, c) => sum + c.exhausted, 0), 0);
    console.log(`contention: ${JSON.stringify(counters.map(({ decisions, roundTrips, conflicts, held }) => ({ decisions, roundTrips, conflicts, held })))}`);
  });

  test("one key from 4 isolates, one request at a time each, default options: at most 1.2 round trips per decision, every one on a different state", async () => {
    // A compare-and-set on a state another isolate changed since is refused and sent again (about 2.6
    // round trips per decision); a key seen contended goes in its log instead: one round trip each.
    const BIG = 1_000_000;
    const PER_ISOLATE = 50;
    const checks = [{ rule: rule({ name: "one-at-a-time", limit: BIG, windowMs: HOUR }), key: "hot", cost: 1 }];
    const store = { kind: "resolved", options: { store: "redis" } };
    const requestsBefore = bridge.requests;
    const lanes = await Promise.all(
      Array.from({ length: ISOLATES }, async (_, isolate) => {
        const outcomes = [];
        for (let i = 0; i < PER_ISOLATE; i++) outcomes.push((await send(isolate, { op: "decide", store, checks, nowMs: Date.now() })).outcome);
        return outcomes;
      }),
    );
    const all = lanes.flat();
    const roundTrips = bridge.requests - requestsBefore;
    // Every decision Redis's, each on a different state; short of them only by visible fail-closed
    // denials (a call a loaded host did not answer within its learnt timeout).
    const decided = all.filter((o) => o.store === "redis");
    const failedClosed = all.filter((o) => o.store !== "redis");
    assert.ok(failedClosed.every((o) => o.allowed === false && o.fallback !== undefined));
    assert.ok(failedClosed.length <= all.length / 20, `${failedClosed.length} fail-closed denials`);
    assert.ok(decided.every((o) => o.allowed));
    assert.equal(new Set(decided.map((o) => o.remaining)).size, decided.length);
    assert.ok(roundTrips <= 1.2 * all.length, `${roundTrips} round trips for ${all.length} decisions`);
    console.log(`one at a time: ${roundTrips} round trips for ${all.length} decisions`);
  });

  test("isolates whose clocks are hours apart take the same decisions as isolates that agree", async () => {
    // Requests one after another, round-robin: the sequence of (allowed, remaining) must not depend on
    // the isolates' clocks. With their own clocks, isolates an hour apart would count in different
    // fixed windows and admit the limit each.
    const run = async (name, skews) => {
      const checks = [{ rule: rule({ name, algorithm: "fixed-window", limit: LIMIT, windowMs: HOUR }), key: "client", cost: 1 }];
      const steps = [];
      const counters = [];
      for (let i = 0; i < 2 * LIMIT; i++) {
        const isolate = i % ISOLATES;
        const store = redisStore(`${name}:`, { skewMs: skews[isolate] });
        const { outcome, counters: after } = await send(isolate, { op: "decide", store, checks, nowMs: Date.now() + skews[isolate] });
        steps.push([outcome.allowed, outcome.remaining]);
        counters[isolate] = after;
      }
      return { steps, counters };
    };
    const agreed = await run("skew-none", [0, 0, 0, 0]);
    const skewed = await run("skew-hours", [0, HOUR, -HOUR, 2 * HOUR + 12_345]);
    assert.deepEqual(skewed.steps, agreed.steps);
    assert.equal(agreed.steps.filter(([allowed]) => allowed).length, LIMIT);
    // The skewed isolates learnt Redis's time from a refusal, once each, then decided in one trip.
    for (const isolate of [1, 2, 3]) assert.equal(skewed.counters[isolate].clockRefusals, 1, `isolate w${isolate}`);
  });

  test("Redis unreachable: the chain falls back to memory, and counts it", async () => {
    const checks = [{ rule: rule({ name: "down-memory", limit: 2, windowMs: HOUR }), key: "client", cost: 1 }];
    const store = {
      kind: "chain",
      primary: redisStore("down:", { urlEnv: "DEAD_REDIS_URL" }),
      memory: { kind: "memory" },
      options: { timeoutMs: HEALTHY_TIMEOUT_MS, breaker: false },
    };
    const { outcome, counters } = await send(0, { op: "decide", store, checks, nowMs: Date.now() });
    assert.equal(outcome.store, "memory");
    assert.equal(outcome.fallback.from, "redis");
    assert.match(outcome.fallback.reason, /redis failed: redis: request failed/);
    assert.equal(counters.errors.redis, 1);
    assert.equal(counters.decided.memory, 1);
    assert.equal(counters.fallbacks, 1);
  });

  test("Redis unreachable with no fallback and failMode closed: denied, and counted", async () => {
    const checks = [{ rule: rule({ name: "down-closed", limit: 2, windowMs: HOUR }), key: "client", cost: 1 }];
    const store = {
      kind: "chain",
      primary: redisStore("down-closed:", { urlEnv: "DEAD_REDIS_URL" }),
      options: { timeoutMs: HEALTHY_TIMEOUT_MS, breaker: false, failMode: "closed" },
    };
    const { outcome, counters } = await send(1, { op: "decide", store, checks, nowMs: Date.now() });
    assert.equal(outcome.allowed, false);
    assert.equal(outcome.store, "none");
    assert.equal(counters.decided.failMode, 1);
    assert.equal(counters.errors.redis, 1);
  });
});
