// Leased quotas, Worker side: the isolate borrows a batch of a hot key's quota from the Durable Object
// and decides from it locally, with no round trip, until the batch is spent or the lease ends.
//
// The object lends (durable-object.js, with the core's arithmetic: sluice/lease.hpp) and charges what
// it lends when it lends it, so everything lent plus everything admitted directly never exceeds the
// rule. This module only keeps the batches, says how big a batch it would like (the key's rate at
// this isolate times the lease's length; the object gives at most a quarter of what the key has left,
// so batches shrink to nothing near the limit), and gives unused units back on its next call to the
// object. See docs/leases.md.
import { LENDING_ALGORITHMS, RETURNING_ALGORITHMS } from "../../../wasm-bindings/sluice.js";
import { SluiceConfigError, describe } from "../engine/errors.js";
import { freshDemand, noteRequest, unitsWanted } from "./demand.js";

/** How long a lease lasts, by default (never past the end of the key's window). */
export const DEFAULT_LEASE_MS = 5000;
const MAX_LEASE_MS = 3_600_000;
/** The most units one lease asks for. */
export const DEFAULT_MAX_LEASE_UNITS = 1000;
// How many keys the isolate tracks (rates and batches); the oldest is dropped beyond it.
const DEFAULT_MAX_KEYS = 10_000;
// Units waiting to go back, per object, at most (beyond it they stay stranded until their window ends).
const MAX_PENDING_RETURNS = 256;

/** @import { Outcome, StoreCheck, StoreOptions } from "./store.js" */
/** @import { DurableStore } from "./durable.js" */

/**
 * The leases' counters (storeStats().leases).
 * @typedef {object} LeaseCounters
 * @property {number} roundTrips Calls to the object.
 * @property {number} leasedDecisions Decisions taken from a lease in this isolate, with no round trip.
 * @property {number} leasesGranted Leases the object granted.
 * @property {number} unitsLent Units those leases carried.
 * @property {number} leasesExpired Leases that ended with units unused.
 * @property {number} unitsReturned Unused units the object took back.
 * @property {number} unitsStranded Unused units that could not go back: admitted by no one until their window ends (a bucket's: until it drains them).
 */

/**
 * @typedef {object} LeaseOptions
 * @property {number} [leaseMs] How long a lease lasts at most (it also ends with the key's window). Default 5000.
 * @property {number} [maxLeaseUnits] The most units one lease asks for. Default 1000.
 * @property {number} [maxKeys] How many keys this isolate tracks. Default 10,000.
 */

/**
 * The store createLeasedStore returns: a durable store whose hot keys are decided from leases.
 * @typedef {{
 *   readonly name: "durable";
 *   readonly counters: Readonly<LeaseCounters>;
 *   decide(checks: readonly StoreCheck[], options?: StoreOptions): Outcome | Promise<Outcome>;
 *   decideLocally(checks: readonly StoreCheck[], options: StoreOptions): Outcome | null;
 *   decideRemotely(checks: readonly StoreCheck[], options?: StoreOptions): Promise<Outcome>;
 *   reset(checks: readonly StoreCheck[], options?: StoreOptions): Promise<void>;
 *   isolateTables(): [];
 *   isBound(env: unknown): boolean;
 * }} LeasedStore
 */

/**
 * checkLeaseOptions validates the `lease` option (true, false or LeaseOptions) and returns the
 * normalized settings, or null for no leases. Throws a SluiceConfigError naming the field.
 * @param {unknown} lease
 * @returns {{leaseMs: number, maxLeaseUnits: number, maxKeys: number} | null}
 */
export function checkLeaseOptions(lease) {
  if (lease === undefined || lease === false) return null;
  if (lease === true) return { leaseMs: DEFAULT_LEASE_MS, maxLeaseUnits: DEFAULT_MAX_LEASE_UNITS, maxKeys: DEFAULT_MAX_KEYS };
  if (lease === null || typeof lease !== "object" || Array.isArray(lease)) {
    throw new SluiceConfigError("lease", `must be true, false or { leaseMs?, maxLeaseUnits?, maxKeys? }; got ${describe(lease)}`);
  }
  const given = /** @type {LeaseOptions} */ (lease);
  for (const field of Object.keys(given)) {
    if (!["leaseMs", "maxLeaseUnits", "maxKeys"].includes(field)) throw new SluiceConfigError(`lease.${field}`, "is not a lease option (known: leaseMs, maxLeaseUnits, maxKeys)");
  }
  const { leaseMs = DEFAULT_LEASE_MS, maxLeaseUnits = DEFAULT_MAX_LEASE_UNITS, maxKeys = DEFAULT_MAX_KEYS } = given;
  if (!Number.isInteger(leaseMs) || leaseMs < 1 || leaseMs > MAX_LEASE_MS) {
    throw new SluiceConfigError("lease.leaseMs", `must be a whole number of milliseconds from 1 to ${MAX_LEASE_MS}; got ${describe(leaseMs)}`);
  }
  if (!Number.isInteger(maxLeaseUnits) || maxLeaseUnits < 1 || maxLeaseUnits > 1 << 20) {
    throw new SluiceConfigError("lease.maxLeaseUnits", `must be a whole number from 1 to 2^20; got ${describe(maxLeaseUnits)}`);
  }
  if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new SluiceConfigError("lease.maxKeys", `must be a whole number >= 1; got ${describe(maxKeys)}`);
  return { leaseMs, maxLeaseUnits, maxKeys };
}

/**
 * createLeasedStore wraps a durable store (createDurableStore) with leases.
 *
 * - decideLocally(checks, { nowMs, peek }): the Outcome when every check's key holds a live lease
 *   with units enough (marked `lease: true`), else null. No I/O: the fallback chain asks it first, so
 *   a lease keeps deciding while the object is unreachable, until it ends.
 * - decideRemotely(checks, options): the object decides, and lends to the checks' keys that are warm
 *   here; unused units of ended leases go back with the call.
 * - decide(checks, options): decideLocally, else decideRemotely.
 * `counters` is live: round trips, leases granted, units lent / used here / given back / stranded.
 * @param {{durable: DurableStore} & LeaseOptions} options
 * @returns {LeasedStore}
 */
export function createLeasedStore(options) {
  const { durable } = options;
  if (durable === null || typeof durable !== "object" || typeof durable.decide !== "function" || typeof durable.objectOf !== "function") {
    throw new SluiceConfigError("durable", `must be a store from createDurableStore; got ${describe(durable)}`);
  }
  const { leaseMs, maxLeaseUnits, maxKeys } = /** @type {{leaseMs: number, maxLeaseUnits: number, maxKeys: number}} */ (checkLeaseOptions({
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    maxLeaseUnits: options.maxLeaseUnits ?? DEFAULT_MAX_LEASE_UNITS,
    maxKeys: options.maxKeys ?? DEFAULT_MAX_KEYS,
  }));

  /** @type {LeaseCounters} */
  const counters = {
    /** Calls to the object (each decides a request; some also lend or take units back). */
    roundTrips: 0,
    /** Decisions taken from a lease in this isolate, with no round trip. */
    leasedDecisions: 0,
    /** Leases the object granted, and the units they carried. */
    leasesGranted: 0,
    unitsLent: 0,
    /** Leases that ended with units unused. */
    leasesExpired: 0,
    /** Unused units the object took back. */
    unitsReturned: 0,
    /** Unused units that could not go back (their window was over, the call failed, or too many waited): not admitted by anyone until their window ends. */
    unitsStranded: 0,
  };

  // "rule id\nkey" -> what this isolate knows of the key: its rate here and the lease it holds.
  const keys = new Map();
  // object name -> [{ rule, key, units, expiresAtMs }] waiting for the next call to that object.
  const returns = new Map();

  function entryOf(check, nowMs) {
    const id = `${check.rule.id}\n${check.key}`;
    let entry = keys.get(id);
    if (entry === undefined) {
      if (keys.size >= maxKeys) dropOldest();
      entry = { rule: check.rule, key: check.key, ...freshDemand(nowMs), units: 0, deadlineMs: 0, expiresAtMs: 0, remaining: 0, resetAtMs: 0, asking: false };
      keys.set(id, entry);
    }
    noteRequest(entry, nowMs, leaseMs);
    return entry;
  }

  function dropOldest() {
    const oldest = keys.entries().next().value;
    if (oldest === undefined) return;
    const [id, entry] = oldest;
    keys.delete(id);
    if (entry.units > 0) giveBackLater(entry);
  }

  // An ended (or dropped) lease's unused units: back to the object with the next call to it. A bucket's
  // are not taken back (the bucket drains them by itself; sluice/lease.hpp): counted as stranded.
  function giveBackLater(entry) {
    counters.leasesExpired++;
    if (!RETURNING_ALGORITHMS.includes(entry.rule.algorithm)) {
      counters.unitsStranded += entry.units;
      entry.units = 0;
      return;
    }
    const name = durable.objectOf(entry.key);
    let list = returns.get(name);
    if (list === undefined) returns.set(name, (list = []));
    if (list.length >= MAX_PENDING_RETURNS) counters.unitsStranded += entry.units;
    else list.push({ rule: entry.rule, key: entry.key, units: entry.units, expiresAtMs: entry.expiresAtMs });
    entry.units = 0;
  }

  // How many units to ask for: the key's rate here times the lease's length; none for a cold key.
  function wish(entry, nowMs) {
    if (entry.asking || !LENDING_ALGORITHMS.includes(entry.rule.algorithm)) return 0;
    return unitsWanted(entry, nowMs, leaseMs, maxLeaseUnits);
  }

  function decideLocally(checks, decideOptions) {
    if (decideOptions.peek === true) return null;
    const { nowMs } = decideOptions;
    const count = checks.length;
    const entries = new Array(count);
    let covered = true;
    for (let i = 0; i < count; i++) {
      const entry = entryOf(checks[i], nowMs);
      entries[i] = entry;
      if (entry.units > 0 && nowMs >= entry.deadlineMs) giveBackLater(entry);
      if (entry.units < checks[i].cost || entries.indexOf(entry) !== i) covered = false;
    }
    if (!covered) return null;
    const decisions = new Array(count);
    let deciding = 0;
    for (let i = 0; i < count; i++) {
      const entry = entries[i];
      entry.units -= checks[i].cost;
      // What is left: this lease's units and what the object had left when it lent them (others may
      // have used some since: an upper bound, as any isolate's view of a shared count is).
      decisions[i] = { allowed: true, limit: entry.rule.limit, remaining: entry.units + entry.remaining, resetMs: Math.max(0, entry.resetAtMs - nowMs), retryAfterMs: 0 };
      if (decisions[i].remaining < decisions[deciding].remaining) deciding = i;
    }
    counters.leasedDecisions++;
    const { limit, remaining, resetMs } = decisions[deciding];
    /** @type {Outcome} */
    const outcome = { allowed: true, limit, remaining, resetMs, retryAfterMs: 0, decidingCheck: deciding, checks: decisions, store: "durable", lease: true };
    return outcome;
  }

  // Local when a lease covers the request, else a call to the object.
  function decide(checks, decideOptions = {}) {
    return decideLocally(checks, decideOptions) ?? decideRemotely(checks, decideOptions);
  }

  async function decideRemotely(checks, decideOptions = {}) {
    const { nowMs } = decideOptions;
    const peek = decideOptions.peek === true;
    const name = durable.objectOf(checks[0].key);
    const oneObject = checks.every((c) => durable.objectOf(c.key) === name);
    const asked = [];
    let lend;
    if (!peek && oneObject && typeof nowMs === "number") {
      const wanted = new Array(checks.length).fill(0);
      for (let i = 0; i < checks.length; i++) {
        const entry = keys.get(`${checks[i].rule.id}\n${checks[i].key}`);
        if (entry === undefined) continue;
        if (entry.units > 0 && nowMs >= entry.deadlineMs) giveBackLater(entry);
        // Ask only when this lease cannot serve the next request anyway.
        if (entry.units >= checks[i].cost) continue;
        // A sliding log's leases must not merge: each is taken back by its own end (keep()).
        if (entry.units > 0 && entry.rule.algorithm === "sliding-log") giveBackLater(entry);
        wanted[i] = wish(entry, nowMs);
        if (wanted[i] > 0) {
          entry.asking = true;
          asked.push(entry);
        }
      }
      if (asked.length > 0) lend = { wanted, leaseMs };
    }
    const giveBack = oneObject ? returns.get(name) : undefined;
    if (giveBack !== undefined) returns.delete(name);
    counters.roundTrips++;
    let outcome;
    try {
      outcome = await durable.decide(checks, /** @type {StoreOptions} */ ({ ...decideOptions, lend, giveBack }));
    } catch (error) {
      if (giveBack !== undefined) for (const g of giveBack) counters.unitsStranded += g.units;
      throw error;
    } finally {
      for (const entry of asked) entry.asking = false;
    }
    if (giveBack !== undefined) {
      const returned = outcome.returned ?? [];
      for (let i = 0; i < giveBack.length; i++) {
        const back = returned[i] ?? 0;
        counters.unitsReturned += back;
        counters.unitsStranded += giveBack[i].units - back;
      }
    }
    if (outcome.leases !== undefined) keep(checks, outcome, nowMs);
    delete outcome.returned;
    delete outcome.leases;
    return outcome;
  }

  // Keeps the leases of a call's answer, timed on this isolate's clock from before the call was sent,
  // so each ends here no later than it does at the object, whatever the two clocks read.
  function keep(checks, outcome, sentAtMs) {
    for (let i = 0; i < checks.length; i++) {
      const lease = outcome.leases[i];
      if (lease === null || lease === undefined) continue;
      const entry = keys.get(`${checks[i].rule.id}\n${checks[i].key}`);
      counters.leasesGranted++;
      counters.unitsLent += lease.units;
      if (entry === undefined) {
        // Dropped while the call was out: nothing will use these units.
        counters.unitsStranded += lease.units;
        continue;
      }
      const deadlineMs = sentAtMs + lease.validForMs;
      // A sliding log takes lent units back by their lease's end: units of two leases cannot share one
      // (giving back more than one lease had at its end would take another isolate's units).
      if (entry.units > 0 && entry.rule.algorithm === "sliding-log" && entry.expiresAtMs !== lease.expiresAtMs) giveBackLater(entry);
      if (entry.units > 0) {
        // Two leases of one key at once (a call lent while another was out): both are in the same window
        // of the key, so they merge and end with the earlier.
        entry.deadlineMs = Math.min(entry.deadlineMs, deadlineMs);
        entry.expiresAtMs = Math.min(entry.expiresAtMs, lease.expiresAtMs);
      } else {
        entry.deadlineMs = deadlineMs;
        entry.expiresAtMs = lease.expiresAtMs;
      }
      entry.units += lease.units;
      entry.remaining = lease.remaining;
      entry.resetAtMs = sentAtMs + outcome.checks[i].resetMs;
    }
  }

  /**
   * reset forgets the checks' keys in the object, and this isolate's leases of them (their units
   * were charged to the state the reset forgets). Leases other isolates hold stay good until they end.
   * @param {readonly StoreCheck[]} checks
   * @param {object} resetOptions
   */
  async function reset(checks, resetOptions) {
    for (const check of checks) {
      const entry = keys.get(`${check.rule.id}\n${check.key}`);
      if (entry !== undefined) entry.units = 0;
    }
    await durable.reset(checks, resetOptions);
  }

  return {
    name: "durable",
    counters,
    decide,
    decideLocally,
    decideRemotely,
    reset,
    /** Leases live in this isolate's JS heap (at most maxKeys keys), not in the core's tables. */
    isolateTables: () => [],
    isBound: (env) => durable.isBound(env),
  };
}
