// The round-trip estimator (stores/round-trip.js): RFC 6298's smoothed round trip and variation, the
// initial timeout before any answer, backoff on unanswered calls, and one estimator per endpoint.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { RECENT_ROUND_TRIPS } from "../../worker/src/stores/recent-round-trips.js";
import { DEFAULT_ROUND_TRIP, RoundTripEstimator, RoundTrips, checkRoundTripOptions } from "../../worker/src/stores/round-trip.js";
import { seededRandom } from "../../worker/src/testing/geography.js";

describe("round-trip estimator", () => {
  test("before any answer, the initial timeout holds a 250 ms +-20 % round trip", () => {
    const estimator = new RoundTripEstimator();
    assert.equal(estimator.timeoutMs, DEFAULT_ROUND_TRIP.initialTimeoutMs);
    assert.ok(estimator.timeoutMs > 250 * 1.2);
  });

  test("follows RFC 6298: first sample sets SRTT = R, RTTVAR = R / 2; then gains 1/8 and 1/4", () => {
    const estimator = new RoundTripEstimator();
    estimator.sample(200);
    assert.deepEqual(estimator.smoothed, { srttMs: 200, rttvarMs: 100 });
    assert.equal(estimator.timeoutMs, 200 + 4 * 100);
    estimator.sample(240);
    // RTTVAR = 3/4 x 100 + 1/4 x |200 - 240| = 85; SRTT = 7/8 x 200 + 1/8 x 240 = 205
    assert.deepEqual(estimator.smoothed, { srttMs: 205, rttvarMs: 85 });
    assert.equal(estimator.timeoutMs, 205 + 340);
  });

  // Table: the distances of the planet tests, 200 jittered samples each; the timeout always exceeds the
  // largest round trip the jitter can produce and stays within 2 x that plus the floor.
  for (const rttMs of [2, 40, 90, 160, 250]) {
    test(`settles above a ${rttMs} ms +-20 % round trip, and not far above`, () => {
      const random = seededRandom(rttMs);
      const estimator = new RoundTripEstimator();
      for (let i = 0; i < 200; i++) estimator.sample(rttMs * (1 + 0.2 * (2 * random() - 1)));
      const worst = rttMs * 1.2;
      assert.ok(estimator.timeoutMs > worst, `timeout ${estimator.timeoutMs} <= worst round trip ${worst}`);
      assert.ok(estimator.timeoutMs <= Math.max(DEFAULT_ROUND_TRIP.minTimeoutMs, 2 * worst + DEFAULT_ROUND_TRIP.floorMs));
    });
  }

  test("an unanswered call doubles the timeout (twice at most) until an answer comes; the clamp holds", () => {
    const estimator = new RoundTripEstimator();
    for (let i = 0; i < 20; i++) estimator.sample(100);
    const settled = estimator.timeoutMs;
    estimator.timedOut();
    assert.equal(estimator.timeoutMs, Math.ceil(settled * 2));
    for (let i = 0; i < 20; i++) estimator.timedOut();
    assert.equal(estimator.timeoutMs, Math.ceil(settled * 4), "two doublings at most");
    const far = new RoundTripEstimator();
    far.sample(2000);
    for (let i = 0; i < 3; i++) far.timedOut();
    assert.equal(far.timeoutMs, DEFAULT_ROUND_TRIP.maxTimeoutMs, "and never above maxTimeoutMs");
    estimator.sample(100);
    assert.ok(estimator.timeoutMs <= settled + 1);
  });

  test("per endpoint; an endpoint never measured takes the timeout of all endpoints together", () => {
    const trips = new RoundTrips(DEFAULT_ROUND_TRIP, 2);
    assert.equal(trips.timeoutMs("a"), DEFAULT_ROUND_TRIP.initialTimeoutMs);
    for (let i = 0; i < 30; i++) trips.sample("a", 250);
    for (let i = 0; i < 30; i++) trips.sample("b", 2);
    assert.ok(trips.timeoutMs("a") > 250);
    assert.equal(trips.timeoutMs("b"), DEFAULT_ROUND_TRIP.minTimeoutMs);
    const fresh = trips.timeoutMs("c");
    assert.notEqual(fresh, DEFAULT_ROUND_TRIP.initialTimeoutMs);
    trips.sample("c", 2); // the third endpoint evicts the least recently used ("a")
    assert.equal(trips.summary.endpoints, 2);
    assert.equal(trips.timeoutMs("a"), trips.summary.timeoutMs);
  });

  test("bad settings throw SluiceConfigError naming the field", () => {
    assert.throws(() => checkRoundTripOptions({ floorMs: -1 }), /roundTrip\.floorMs/);
    assert.throws(() => checkRoundTripOptions({ maxTimeoutMs: Infinity }), /roundTrip\.maxTimeoutMs/);
    assert.throws(() => checkRoundTripOptions({ minTimeoutMs: 500, maxTimeoutMs: 400 }), /roundTrip\.minTimeoutMs/);
    assert.throws(() => checkRoundTripOptions({ speed: 1 }), /roundTrip\.speed/);
    assert.equal(checkRoundTripOptions(undefined), DEFAULT_ROUND_TRIP);
  });
});

describe("the recent round trips' spread", () => {
  test("median, 99th percentile (nearest rank) and largest of the last RECENT_ROUND_TRIPS over every endpoint; older ones drop out", () => {
    const trips = new RoundTrips();
    assert.deepEqual(trips.summary.recent, { count: 0, p50Ms: NaN, p99Ms: NaN, maxMs: NaN });
    // 1..100 ms over two endpoints, in a shuffled order: p50 is 50, p99 is 99, the largest 100.
    const order = Array.from({ length: 100 }, (_, i) => ((i * 37) % 100) + 1);
    order.forEach((ms, i) => trips.sample(i % 2 === 0 ? "object-a" : "object-b", ms));
    trips.sample("object-a", Infinity); // not a round trip: ignored, as the estimator ignores it
    assert.deepEqual(trips.summary.recent, { count: 100, p50Ms: 50, p99Ms: 99, maxMs: 100 });
    // A ring: after RECENT_ROUND_TRIPS samples of 7 ms, the slow ones are gone.
    for (let i = 0; i < RECENT_ROUND_TRIPS; i++) trips.sample("object-a", 7);
    assert.deepEqual(trips.summary.recent, { count: RECENT_ROUND_TRIPS, p50Ms: 7, p99Ms: 7, maxMs: 7 });
    trips.sample("object-b", 500);
    assert.equal(trips.summary.recent.maxMs, 500);
    assert.equal(trips.summary.recent.p99Ms, 7, "one slow call in 256 is above the 99th percentile");
  });
});
