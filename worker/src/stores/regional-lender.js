// The regional tier, the regional object's side: a Durable Object placed near a group of isolates (by
// its locationHint) borrows a key's quota from the key's home object and lends it on to the isolates
// near it, as Doorman's server tree does. A far isolate's refill is then a round trip to a nearby
// object, and only the regional object crosses the planet: below the key's limit, at most once per
// isolate lease length per key, its first lease included (test/js/planet-leases.test.js).
//
// It is exact for the same reason an isolate's lease is: every unit it passes on was charged to the
// key at the home object when the home object lent it, and a part passed on never outlives the lease
// it came from. The regional object times its lease from before it sent its call (leases.js), and
// passes on what is left of it on its own clock (validForMs), which the isolate times from before it
// sent its own call: each end comes no later than the one above it. Units come back by the lease's
// end (expiresAtMs, the home object's clock); at most what was passed on from that lease is taken back.
import { DenialCache } from "./denial-cache.js";
import { createDurableStore } from "./durable.js";
import { createLeasedStore } from "./leases.js";

/** @import { StoreCheck } from "./store.js" */

// A regional object's leases are the sum of its isolates': it asks for up to this many times an
// isolate's largest lease.
const REGIONAL_UNITS_FACTOR = 8;
const MAX_REGIONAL_LEASE_MS = 3_600_000;
// How many leases a request waits for before it crosses to the home object itself.
const TOP_UP_ATTEMPTS = 3;
// The most denied keys a regional object remembers.
const MAX_DENIED_KEYS = 10_000;

/**
 * The settings a regional call carries: how to reach the keys' home objects, and the leases' length.
 * @typedef {{ name: string, shards: number | "key", leaseMs: number, maxLeaseUnits: number }} RegionalSettings
 */

/**
 * RegionalLender lends one store's keys on to the isolates near this object.
 */
export class RegionalLender {
  #leased;
  #ctx;
  #denials = new DenialCache(MAX_DENIED_KEYS);

  /**
   * @param {{ namespace: unknown, settings: RegionalSettings, ctx?: { waitUntil(promise: Promise<unknown>): void } }} options
   */
  constructor({ namespace, settings, ctx }) {
    const home = createDurableStore({ binding: /** @type {any} */ (namespace), name: settings.name, shards: settings.shards });
    this.#leased = createLeasedStore({
      durable: home,
      // Four times the isolates' length, renewed when half an isolate's length (and two timeouts) is
      // left of it: a part passed on lasts at least half an isolate lease, and a renewal for time
      // crosses the planet once per 3.5 isolate lease lengths less two timeouts. (At three lengths,
      // renewed a whole length ahead, little was left between renewals once two timeouts of a 250 ms
      // home were counted: they came to 2-3 s on a loaded host.)
      leaseMs: Math.min(MAX_REGIONAL_LEASE_MS, settings.leaseMs * 4),
      renewAheadMs: settings.leaseMs / 2,
      maxLeaseUnits: Math.min(1 << 20, settings.maxLeaseUnits * REGIONAL_UNITS_FACTOR),
    });
    this.#ctx = ctx;
  }

  /** The leases' counters: roundTrips are the calls that crossed the planet to the home object. */
  get counters() {
    return { ...this.#leased.counters };
  }

  /**
   * decide decides a request from what this object holds, else at the home object; when admitted,
   * lends on to the caller (`lend`: { wanted }). `giveBack` is taken back first.
   * @param {readonly StoreCheck[]} checks
   * @param {{ peek?: boolean, lend?: { wanted: number[] }, giveBack?: any[] }} options
   * @param {() => number} now This object's clock.
   */
  async decide(checks, options, now) {
    const nowMs = now();
    const returned = options.giveBack === undefined ? undefined : this.#leased.takeBackLent(options.giveBack, nowMs);
    const peek = options.peek === true;
    if (!peek) {
      // A denial the home object gave stands until its retry time (unless units came back here since):
      // no crossing to hear it again.
      const denied = this.#leased.holds(checks, nowMs) ? null : this.#denials.lookup(checks, nowMs);
      if (denied !== null) return returned === undefined ? denied : { ...denied, returned };
      // A request this object cannot cover waits for a lease from the home object, one call per key
      // however many requests wait (a refill on its way, or one started now): waiting costs no more
      // than crossing, and every request crossing on its own would be a call each.
      // Others waiting may take what lands first: a few more tries before crossing itself.
      // (topUp asks nothing while the home object has just said it has nothing to lend.)
      for (let attempt = 0; attempt < TOP_UP_ATTEMPTS && !this.#leased.holds(checks, now()); attempt++) {
        const at = now();
        const landing = this.#leased.refillsLanding(checks);
        if (landing !== null) await landing;
        else if (!(await this.#topUp(checks, at))) break;
      }
    }
    const decideOptions = { nowMs: now(), peek, ctx: this.#ctx };
    /** @type {any} */
    const outcome = { ...(await this.#leased.decide(checks, decideOptions)) };
    if (outcome.lease !== true && !peek) this.#denials.remember(checks, outcome, decideOptions.nowMs);
    delete outcome.lease;
    if (outcome.allowed && !peek && options.lend !== undefined) {
      const later = now();
      outcome.leases = checks.map((check, i) => this.#leased.lendOn(check, options.lend?.wanted?.[i] ?? 0, later, { nowMs: later, ctx: this.#ctx }));
    }
    if (returned !== undefined) outcome.returned = returned;
    return outcome;
  }

  // Tops the checks' keys up from the home object; false when nothing was asked (it has nothing to lend).
  /** @param {readonly StoreCheck[]} checks @param {number} nowMs @returns {Promise<boolean>} */
  async #topUp(checks, nowMs) {
    let asked = false;
    await Promise.all(
      checks.map(async (/** @type {StoreCheck} */ check) => {
        asked = (await this.#leased.topUp(check, check.cost, nowMs, { nowMs, ctx: this.#ctx })) || asked;
      }),
    );
    return asked;
  }

  /**
   * refill lends on to the caller without deciding a request, asking the home object first (and
   * waiting for it) when this object holds nothing of a key.
   * @param {readonly StoreCheck[]} checks
   * @param {{ lend: { wanted: number[] }, giveBack?: any[] }} options
   * @param {() => number} now This object's clock.
   */
  async refill(checks, options, now) {
    const returned = options.giveBack === undefined ? null : this.#leased.takeBackLent(options.giveBack, now());
    const leases = [];
    const resetMs = [];
    for (let i = 0; i < checks.length; i++) {
      const wanted = options.lend?.wanted?.[i] ?? 0;
      if (wanted > 0) await this.#leased.topUp(checks[i], wanted, now(), { nowMs: now(), ctx: this.#ctx });
      const nowMs = now();
      leases.push(wanted > 0 ? this.#leased.lendOn(checks[i], wanted, nowMs, { nowMs, ctx: this.#ctx }) : null);
      resetMs.push(this.#leased.resetInMs(checks[i], nowMs));
    }
    return { leases, returned, resetMs };
  }
}
