// --suggest: for each rule, the same rule replayed at candidate limits, to find the limits at which
// 0.1 %, 1 % and 5 % of its clients (and of its requests) would have been limited.
//
// Exact at every candidate, for every algorithm: each candidate is the rule itself (algorithm, window,
// key, cost, countDenied; a bucket's burst scaled with its limit) with another limit, in a core of its
// own, charged with every request the rule checked, at the request's time. No model of rates is
// involved, so what a candidate reports is what that limit would have done. What is approximate is
// only the grid: candidates are the rule's limit times 2^(k/3) (steps of 26 %), k = -15..14, rounded
// and deduplicated, so a suggestion is the smallest candidate that meets the share, and the true
// threshold lies between it and the candidate below. Each candidate is the rule alone: in the real
// replay, a request another rule denied is not charged (all-or-nothing); here every request counts.
// A candidate whose key table would not fit the core's memory (a long sliding log) is skipped, and
// the report lists it.
import { SluiceCore, sluiceWasm, tableBytes } from "./library.js";

/** @import { ReplayRule } from "./gateway-engine.js" */

/** The shares --suggest reports. */
export const TARGET_SHARES = Object.freeze([0.001, 0.01, 0.05]);
const STEPS = 30; // one bit each in ClientRecord.limitedAt
const TABLE_BUDGET = 48 * 1024 * 1024;

export class SuggestGrid {
  /** @param {ReplayRule} rule */
  constructor(rule) {
    const limits = new Set();
    for (let k = -15; k < STEPS - 15; k++) {
      const limit = Math.round(rule.limit * 2 ** (k / 3));
      if (limit >= 1 && limit <= 2 ** 31) limits.add(limit);
    }
    /** @type {number[]} */
    this.limits = [...limits].sort((a, b) => a - b);
    /** @type {number[]} */
    this.skippedLimits = [];
    /** @type {{ limit: number, core: SluiceCore | null }[]} */
    this.candidates = this.limits.map((limit) => {
      const burst = rule.burst > 0 ? Math.max(1, Math.round((rule.burst * limit) / rule.limit)) : 0;
      if (tableBytes(rule.algorithm, limit, rule.keyCapacity) > TABLE_BUDGET) {
        this.skippedLimits.push(limit);
        return { limit, core: null };
      }
      const core = SluiceCore.instantiate(sluiceWasm);
      core.addRule({ algorithm: /** @type {any} */ (rule.algorithm), limit, windowMs: rule.windowMs, burst, keyCapacity: rule.keyCapacity, countDenied: rule.countDenied });
      return { limit, core };
    });
    /** Requests each candidate would have limited. @type {number[]} */
    this.requestsLimited = this.limits.map(() => 0);
    /** Clients each candidate would have limited (filled as client records retire). @type {number[]} */
    this.clientsLimited = this.limits.map(() => 0);
  }

  /**
   * check charges one request to every candidate; returns the bit mask of the candidates that denied it.
   * @param {string} key
   * @param {number} cost
   * @param {number} nowMs
   */
  check(key, cost, nowMs) {
    let mask = 0;
    const candidates = this.candidates;
    for (let i = 0; i < candidates.length; i++) {
      const core = candidates[i].core;
      if (core === null) continue;
      let allowed;
      try {
        allowed = core.check(0, key, cost, nowMs).allowed;
      } catch {
        continue; // a key the core refuses (over 512 bytes); the limiter hashed it, the grid cannot
      }
      if (!allowed) {
        this.requestsLimited[i]++;
        mask |= 1 << i;
      }
    }
    return mask;
  }

  /** retire counts a client's candidates. @param {number} limitedAt */
  retire(limitedAt) {
    for (let i = 0; limitedAt !== 0; i++, limitedAt >>>= 1) if (limitedAt & 1) this.clientsLimited[i]++;
  }

  /**
   * report gives, per target share, the smallest candidate at which no more than that share of
   * clients (and of requests) was limited, with the candidates themselves.
   * @param {number} clients
   * @param {number} requests
   */
  report(clients, requests) {
    const pick = (/** @type {number[]} */ counts, /** @type {number} */ total, /** @type {number} */ share) => {
      for (let i = 0; i < this.limits.length; i++) {
        if (this.candidates[i].core !== null && counts[i] <= share * total) {
          return { limit: this.limits[i], limited: counts[i], share: total === 0 ? 0 : counts[i] / total, below: i === 0 ? null : this.limits[i - 1] };
        }
      }
      return null;
    };
    return {
      clients: TARGET_SHARES.map((share) => ({ target: share, ...pick(this.clientsLimited, clients, share) })),
      requests: TARGET_SHARES.map((share) => ({ target: share, ...pick(this.requestsLimited, requests, share) })),
      candidates: this.limits.map((limit, i) => ({ limit, clientsLimited: this.clientsLimited[i], requestsLimited: this.requestsLimited[i], skipped: this.candidates[i].core === null })),
    };
  }
}
