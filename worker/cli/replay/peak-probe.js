// Per-client peak rates, counted by the core: for each replayed rule, a fixed-window rule of the same
// window and a limit no client reaches (2^31 units, or less where limit x window would overflow the
// core's bound) in a core of the replay's own, apart from the limiters. Charging it with each request's
// cost, its `limit - remaining` is the cost units the client sent in the current aligned window, so no
// window arithmetic is done here. Its key table holds as many keys as the rule's, so it remembers the
// same clients the limiter does.
import { SluiceCore, SluiceError, sluiceWasm } from "./library.js";

const MAX_LIMIT = 2 ** 31;
const MAX_PRODUCT = 2 ** 61;
// SluiceCore's bound on a key; longer keys (the library hashes them for the limiter) get no peak.
const MAX_KEY_CHARS = 512;

export class PeakProbe {
  constructor() {
    this.core = SluiceCore.instantiate(sluiceWasm);
    /** @type {number[]} */
    this.limits = [];
    /** Requests whose key was too long to probe (their clients' peaks leave them out). */
    this.skipped = 0;
  }

  /**
   * addRule adds the probe of a rule with this window and key capacity; returns its id.
   * @param {number} windowMs
   * @param {number} keyCapacity
   */
  addRule(windowMs, keyCapacity) {
    const limit = Math.min(MAX_LIMIT, Math.floor(MAX_PRODUCT / windowMs) - 1);
    const id = this.core.addRule({ algorithm: "fixed-window", limit, windowMs, keyCapacity });
    this.limits[id] = limit;
    return id;
  }

  /**
   * count charges `cost` to `key` at `nowMs` and returns the key's cost units in the current window.
   * @param {number} probe
   * @param {string} key
   * @param {number} cost
   * @param {number} nowMs
   */
  count(probe, key, cost, nowMs) {
    if (key.length > MAX_KEY_CHARS) {
      this.skipped++;
      return 0;
    }
    try {
      return this.limits[probe] - this.core.check(probe, key, cost, nowMs).remaining;
    } catch (error) {
      // A key of more than 512 UTF-8 bytes in fewer characters: the core refuses it, as above.
      if (!(error instanceof SluiceError)) throw error;
      this.skipped++;
      return 0;
    }
  }
}
