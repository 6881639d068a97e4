// The last round trips a store's calls took, for the dashboard and /metrics (gateway/store-metrics.js):
// the smoothed round trip (round-trip.js) says where a store's latency settles, not how its recent
// calls spread, and a p99 that doubled is the first sign of a store in trouble. A ring of the last
// RECENT_ROUND_TRIPS samples: fixed memory, and "recent" means the last calls, however long ago they
// were (the dashboard's aggregator expires a value an isolate stopped reporting).

/** How many of the last round trips are kept. */
export const RECENT_ROUND_TRIPS = 256;

/**
 * The spread of the recent round trips: how many are kept, their median, 99th percentile and
 * largest, in ms (NaN when none was measured yet). A percentile is the nearest-rank one: the
 * smallest sample with at least that share of the samples at or below it.
 * @typedef {{ count: number, p50Ms: number, p99Ms: number, maxMs: number }} RecentSpread
 */

export class RecentRoundTrips {
  #samples = new Float64Array(RECENT_ROUND_TRIPS);
  #count = 0;
  #next = 0;

  /** add keeps one round trip (ms), dropping the oldest when the ring is full. @param {number} rttMs */
  add(rttMs) {
    this.#samples[this.#next] = rttMs;
    this.#next = (this.#next + 1) % RECENT_ROUND_TRIPS;
    if (this.#count < RECENT_ROUND_TRIPS) this.#count++;
  }

  /** spread reports the kept round trips' median, 99th percentile and largest. @returns {RecentSpread} */
  get spread() {
    if (this.#count === 0) return { count: 0, p50Ms: NaN, p99Ms: NaN, maxMs: NaN };
    const sorted = this.#samples.slice(0, this.#count).sort();
    const rank = (/** @type {number} */ share) => sorted[Math.max(0, Math.ceil(share * sorted.length) - 1)];
    return { count: this.#count, p50Ms: rank(0.5), p99Ms: rank(0.99), maxMs: sorted[sorted.length - 1] };
  }
}
