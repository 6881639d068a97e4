// How long to wait for a store that lives somewhere else on the planet. A fixed timeout is wrong
// everywhere but one distance: 50 ms fails every call from a region 150 ms away, and 1 s waits far too
// long for a dead object next door. So each store endpoint (a Durable Object, a Redis database) gets
// the timeout TCP gives a connection (RFC 6298): the smoothed round trip plus four times its variation,
// learnt from the answers it gives.
//
// A round trip is measured from when the call leaves the isolate to when its answer arrives: the
// caller starts the clock at the send, never while a request waits in its own isolate (behind a batch,
// a lock), which is not the store's slowness. The margins are wide on purpose: a call that times out
// is decided without the store (denied, by default, for an exact store), and a charge the store made
// for it can only be taken back while nobody else charged the key; an object's own queue and storage
// write, on a loaded host, took over 100 ms beyond the network's round trip in the planet tests
// (load 4-6 on 2 cores). So the margin above the smoothed round trip is at least 200 ms, and no
// timeout is below 300 ms: a dead object next door costs a request 300 ms until its breaker opens.
//
// An answer that arrives after its caller gave up is still
// a round trip and is sampled; a call that never answers backs the timeout off (doubles it, as RFC
// 6298 section 5.5 does) until an answer comes.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { RecentRoundTrips } from "./recent-round-trips.js";

/**
 * @typedef {object} RoundTripOptions
 * @property {number} [initialTimeoutMs] The timeout before any answer was measured. Default 1000 (holds at a 250 ms +-20 % round trip).
 * @property {number} [floorMs] The least margin above the smoothed round trip (RFC 6298's G). Default 200.
 * @property {number} [minTimeoutMs] The timeout is never below this. Default 300.
 * @property {number} [maxTimeoutMs] Nor above this (backoff included). Default 5000.
 */

/**
 * The estimator's settings by default.
 * @type {Readonly<Required<RoundTripOptions>>}
 */
export const DEFAULT_ROUND_TRIP = Object.freeze({ initialTimeoutMs: 1000, floorMs: 200, minTimeoutMs: 300, maxTimeoutMs: 5000 });

// RFC 6298's gains: the smoothed round trip moves an eighth of the way to each sample, its variation a quarter.
const ALPHA = 1 / 8;
const BETA = 1 / 4;
const K = 4;
// At most this many doublings of the timeout while calls go unanswered (x4).
const MAX_BACKOFFS = 2;

/**
 * checkRoundTripOptions validates the estimator's settings and fills in the defaults; throws
 * SluiceConfigError naming the field (`field` prefixes it).
 * @param {RoundTripOptions | undefined} options
 * @param {string} field
 * @returns {Readonly<Required<RoundTripOptions>>}
 */
export function checkRoundTripOptions(options, field = "roundTrip") {
  if (options === undefined) return DEFAULT_ROUND_TRIP;
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new SluiceConfigError(field, `must be an object { initialTimeoutMs, floorMs, minTimeoutMs, maxTimeoutMs }; got ${describe(options)}`);
  }
  const settings = { ...DEFAULT_ROUND_TRIP, ...options };
  for (const [name, value] of Object.entries(settings)) {
    if (!Object.hasOwn(DEFAULT_ROUND_TRIP, name)) throw new SluiceConfigError(`${field}.${name}`, "is not a round-trip setting");
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || (name !== "floorMs" && value === 0)) {
      throw new SluiceConfigError(`${field}.${name}`, `must be a finite number of milliseconds${name === "floorMs" ? " >= 0" : " > 0"}; got ${describe(value)}`);
    }
  }
  if (settings.minTimeoutMs > settings.maxTimeoutMs) {
    throw new SluiceConfigError(`${field}.minTimeoutMs`, `must not exceed maxTimeoutMs (${settings.maxTimeoutMs}); got ${settings.minTimeoutMs}`);
  }
  return Object.freeze(settings);
}

/**
 * RoundTripEstimator learns one endpoint's round trip and says how long to wait for it.
 */
export class RoundTripEstimator {
  #settings;
  /** Smoothed round trip, ms; NaN before the first sample. */
  #srtt = NaN;
  /** Its mean deviation, ms. */
  #rttvar = NaN;
  /** Timeouts since the last answer: each doubles the timeout. */
  #backoffs = 0;
  #samples = 0;

  /** @param {Readonly<Required<RoundTripOptions>>} [settings] */
  constructor(settings = DEFAULT_ROUND_TRIP) {
    this.#settings = settings;
  }

  /**
   * sample records one measured round trip (ms, from the send to the answer). An answer, even a late
   * one, ends any backoff.
   * @param {number} rttMs
   */
  sample(rttMs) {
    if (!(rttMs >= 0) || rttMs === Infinity) return;
    if (this.#samples === 0) {
      this.#srtt = rttMs;
      this.#rttvar = rttMs / 2;
    } else {
      this.#rttvar = (1 - BETA) * this.#rttvar + BETA * Math.abs(this.#srtt - rttMs);
      this.#srtt = (1 - ALPHA) * this.#srtt + ALPHA * rttMs;
    }
    this.#samples++;
    this.#backoffs = 0;
  }

  /**
   * timedOut records a call that did not answer within timeoutMs: the next calls wait twice as long,
   * up to MAX_BACKOFFS doublings. RFC 6298 doubles without end because TCP retransmits; here the
   * caller decides without the store (denies, by default) when the wait ends, so waiting much longer
   * for a store that is cut off only delays that denial.
   */
  timedOut() {
    if (this.#backoffs < MAX_BACKOFFS) this.#backoffs++;
  }

  /**
   * timeoutMs is how long to wait for the next call: SRTT + max(floorMs, 4 x RTTVAR), doubled per
   * unanswered call since the last answer, within [minTimeoutMs, maxTimeoutMs]; initialTimeoutMs
   * before any answer.
   * @returns {number}
   */
  get timeoutMs() {
    const { initialTimeoutMs, floorMs, minTimeoutMs, maxTimeoutMs } = this.#settings;
    const base = this.#samples === 0 ? initialTimeoutMs : this.#srtt + Math.max(floorMs, K * this.#rttvar);
    return Math.min(maxTimeoutMs, Math.max(minTimeoutMs, Math.ceil(base * 2 ** this.#backoffs)));
  }

  /** How many round trips were measured. */
  get samples() {
    return this.#samples;
  }

  /** The smoothed round trip (ms; NaN before the first sample) and its variation. */
  get smoothed() {
    return { srttMs: this.#srtt, rttvarMs: this.#rttvar };
  }
}

/**
 * RoundTrips keeps one estimator per endpoint (a Durable Object's name, a Redis URL), at most `maxEndpoints`
 * of them (the least recently used go). An endpoint never measured takes its timeout from the
 * estimator of all endpoints together, which has seen this isolate's distance to the store's home.
 */
export class RoundTrips {
  #settings;
  #maxEndpoints;
  /** @type {Map<string, RoundTripEstimator>} */
  #endpoints = new Map();
  #all;
  // The last round trips of every endpoint together, for their spread.
  #recent = new RecentRoundTrips();

  /** @param {Readonly<Required<RoundTripOptions>>} [settings] @param {number} [maxEndpoints] */
  constructor(settings = DEFAULT_ROUND_TRIP, maxEndpoints = 1024) {
    this.#settings = settings;
    this.#maxEndpoints = maxEndpoints;
    this.#all = new RoundTripEstimator(settings);
  }

  /**
   * timeoutMs is how long to wait for `endpoint` now.
   * @param {string} endpoint
   * @returns {number}
   */
  timeoutMs(endpoint) {
    const own = this.#endpoints.get(endpoint);
    return own !== undefined && own.samples > 0 ? own.timeoutMs : this.#all.timeoutMs;
  }

  /**
   * sample records a round trip of `endpoint`, ms from the send to the answer.
   * @param {string} endpoint
   * @param {number} rttMs
   */
  sample(endpoint, rttMs) {
    this.#of(endpoint).sample(rttMs);
    this.#all.sample(rttMs);
    if (rttMs >= 0 && rttMs !== Infinity) this.#recent.add(rttMs);
  }

  /**
   * timedOut records a call to `endpoint` that did not answer in time.
   * @param {string} endpoint
   */
  timedOut(endpoint) {
    this.#of(endpoint).timedOut();
  }

  /**
   * What the estimators know, for storeStats(): endpoints tracked, samples, the smoothed round trip
   * over all, and the spread of the last round trips (recent-round-trips.js).
   */
  get summary() {
    const { srttMs, rttvarMs } = this.#all.smoothed;
    return { endpoints: this.#endpoints.size, samples: this.#all.samples, srttMs, rttvarMs, timeoutMs: this.#all.timeoutMs, recent: this.#recent.spread };
  }

  /** @param {string} endpoint */
  #of(endpoint) {
    let estimator = this.#endpoints.get(endpoint);
    if (estimator !== undefined) {
      // Most recently used last, so the first in the map is the one to drop.
      this.#endpoints.delete(endpoint);
    } else {
      estimator = new RoundTripEstimator(this.#settings);
      if (this.#endpoints.size >= this.#maxEndpoints) this.#endpoints.delete(/** @type {string} */ (this.#endpoints.keys().next().value));
    }
    this.#endpoints.set(endpoint, estimator);
    return estimator;
  }
}
