// Leased quotas, Worker side: the isolate borrows a batch of a hot key's quota from the Durable Object
// and decides from it locally, with no round trip, until the batch is spent or the lease ends.
//
// The object lends (durable-object.js, with the core's arithmetic: sluice/lease.hpp) and charges what
// it lends when it lends it, so everything lent plus everything admitted directly never exceeds the
// rule. This module only keeps the batches, says how big a batch it would like (the key's rate at
// this isolate times the lease's length; the object gives at most a quarter of what the key has left,
// so batches shrink to nothing near the limit), asks for the next batch in the background before the
// current one runs out or its window ends (so that a warm key never waits on a round trip, however far
// the object is: near a window's end the object lends from the next window, usable from its start),
// and gives unused units back on its next call to the object. See docs/leases.md.
import { LENDING_ALGORITHMS, RETURNING_ALGORITHMS, WINDOW_LENDING_ALGORITHMS } from "../../../wasm-bindings/sluice.js";
import { nowMs as wallClockMs } from "../engine/clock.js";
import { SluiceConfigError, describe } from "../engine/errors.js";
import { freshDemand, noteRequest, unitsWanted } from "./demand.js";
import { checkLocationHint } from "./location-hints.js";
import { RoundTrips } from "./round-trip.js";

/** How long a lease lasts, by default (never past the end of the key's window). */
export const DEFAULT_LEASE_MS = 5000;
const MAX_LEASE_MS = 3_600_000;
/** The most units one lease asks for. */
export const DEFAULT_MAX_LEASE_UNITS = 1000;
// How many keys the isolate tracks (rates and batches); the oldest is dropped beyond it.
const DEFAULT_MAX_KEYS = 10_000;
const LEASE_FIELDS = ["leaseMs", "maxLeaseUnits", "maxKeys", "refill", "locationHint"];
// Units waiting to go back, per object, at most (beyond it they stay stranded until their window ends).
const MAX_PENDING_RETURNS = 256;
// A warm key asks for its next lease when what it holds would last fewer than this many of the
// object's timeouts (smoothed round trip + 4 deviations, round-trip.js) at its rate here, or when its
// lease ends within as long: the refill then lands before the units are spent, with a round trip to spare.
const REFILL_AHEAD_TIMEOUTS = 2;
// A regional object's first lease of a key is at least this fraction of its largest (topUp).
const FIRST_REGIONAL_LEASE_DIVISOR = 8;

/** @import { Outcome, StoreCheck, StoreOptions, TimedStoreOptions } from "./store.js" */
/** @import { DurableStore } from "./durable.js" */
/** @import { GiveBack, Lease, ObjectOutcome } from "./durable-object.js" */
/** @import { Demand } from "./demand.js" */

/**
 * A lease this isolate holds: `units` left to spend here until deadlineMs (this isolate's clock);
 * `out` of them passed on to others (a regional object's sub-leases).
 * @typedef {{ units: number, startMs: number, startsAtMs: number | undefined, deadlineMs: number, expiresAtMs: number, endsWithWindow: boolean, out: number }} HeldLease
 */
/**
 * What this isolate knows of one key: its demand here, the leases it holds (earliest deadline first),
 * what the object last said of it, and its refill on the way.
 * @typedef {Demand & {
 *   rule: StoreCheck["rule"], key: string, held: HeldLease[], remaining: number, resetAtMs: number,
 *   askingUntilMs: number, refilling: Promise<void> | null, quietUntilMs: number,
 * }} KeyEntry
 */

/**
 * The leases' counters (storeStats().leases).
 * @typedef {object} LeaseCounters
 * @property {number} roundTrips Calls to the object (refills included).
 * @property {number} refills Calls that asked for a warm key's next lease in the background, before its
 *   current one ran out: no request waited on them (roundTrips - refills did wait).
 * @property {number} leasedDecisions Decisions taken from a lease in this isolate, with no round trip.
 * @property {number} leasesGranted Leases the object granted.
 * @property {number} leasesAhead Of those, leases lent ahead from the key's next window (a fixed window's or
 *   sliding counter's, asked near its window's end), usable from that window's start.
 * @property {number} bridgedDecisions Decisions taken across a window's start, where the isolate cannot tell which
 *   window the object is in, each spending a unit of the old window's lease and one of the lease lent ahead (the
 *   one of the two that admits no one is counted in unitsStranded).
 * @property {number} unitsLent Units those leases carried.
 * @property {number} leasesExpired Leases that ended with units unused.
 * @property {number} unitsReturned Unused units the object took back.
 * @property {number} unitsStranded Unused units that could not go back: admitted by no one until their window ends (a bucket's: until it drains them).
 * @property {number} unitsPassedOn A regional object's: units of its leases passed on to the isolates near it.
 */

/**
 * @typedef {object} LeaseOptions
 * @property {number} [leaseMs] How long a lease lasts at most (it also ends with the key's window). Default 5000.
 * @property {number} [maxLeaseUnits] The most units one lease asks for. Default 1000.
 * @property {number} [maxKeys] How many keys this isolate tracks. Default 10,000.
 * @property {string | (() => string | undefined)} [locationHint] Decide and lend through a regional object placed
 *   near this isolate (a Durable Objects location hint, or a function asked at each call; undefined: the home object
 *   directly): far isolates' refills become nearby round trips (docs/leases.md, "A regional tier").
 * @property {boolean} [refill] Ask for a warm key's next lease in the background before its current one runs out
 *   (or ends), so that its requests never wait on a round trip. Default true; false asks only when a request finds
 *   no units (it then waits for the answer).
 */

/**
 * The store createLeasedStore returns: a durable store whose hot keys are decided from leases.
 * @typedef {{
 *   readonly name: "durable";
 *   readonly counters: Readonly<LeaseCounters>;
 *   decide(checks: readonly StoreCheck[], options?: StoreOptions): Outcome | Promise<Outcome>;
 *   decideLocally(checks: readonly StoreCheck[], options: StoreOptions): Outcome | null;
 *   decideRemotely(checks: readonly StoreCheck[], options?: StoreOptions): Promise<Outcome>;
 *   lendOn(check: StoreCheck, wanted: number, nowMs: number, options: StoreOptions): { units: number, expiresAtMs: number, validForMs: number, remaining: number, endsWithWindow: boolean } | null;
 *   takeBackLent(giveBack: ReadonlyArray<{ rule: StoreCheck["rule"], key: string, units: number, expiresAtMs: number }>, nowMs: number): number[];
 *   topUp(check: StoreCheck, wanted: number, nowMs: number, options: StoreOptions): Promise<boolean>;
 *   refillsLanding(checks: readonly StoreCheck[]): Promise<unknown> | null;
 *   holds(checks: readonly StoreCheck[], nowMs: number): boolean;
 *   resetInMs(check: StoreCheck, nowMs: number): number;
 *   reset(checks: readonly StoreCheck[], options?: StoreOptions): Promise<void>;
 *   readonly blockList?: import("./block-list-table.js").BlockListStore;
 *   isolateTables(): [];
 *   isBound(env: unknown): boolean;
 * }} LeasedStore
 */

/**
 * checkLeaseOptions validates the `lease` option (true, false or LeaseOptions) and returns the
 * normalized settings, or null for no leases. Throws a SluiceConfigError naming the field.
 * @param {unknown} lease
 * @returns {{leaseMs: number, maxLeaseUnits: number, maxKeys: number, refill: boolean, locationHint?: string | (() => string | undefined)} | null}
 */
export function checkLeaseOptions(lease) {
  if (lease === undefined || lease === false) return null;
  if (lease === true) return { leaseMs: DEFAULT_LEASE_MS, maxLeaseUnits: DEFAULT_MAX_LEASE_UNITS, maxKeys: DEFAULT_MAX_KEYS, refill: true };
  if (lease === null || typeof lease !== "object" || Array.isArray(lease)) {
    throw new SluiceConfigError("lease", `must be true, false or { leaseMs?, maxLeaseUnits?, maxKeys?, refill?, locationHint? }; got ${describe(lease)}`);
  }
  const given = /** @type {LeaseOptions} */ (lease);
  for (const field of Object.keys(given)) {
    if (!LEASE_FIELDS.includes(field)) throw new SluiceConfigError(`lease.${field}`, `is not a lease option (known: ${LEASE_FIELDS.join(", ")})`);
  }
  const { leaseMs = DEFAULT_LEASE_MS, maxLeaseUnits = DEFAULT_MAX_LEASE_UNITS, maxKeys = DEFAULT_MAX_KEYS, refill = true } = given;
  if (!Number.isInteger(leaseMs) || leaseMs < 1 || leaseMs > MAX_LEASE_MS) {
    throw new SluiceConfigError("lease.leaseMs", `must be a whole number of milliseconds from 1 to ${MAX_LEASE_MS}; got ${describe(leaseMs)}`);
  }
  if (!Number.isInteger(maxLeaseUnits) || maxLeaseUnits < 1 || maxLeaseUnits > 1 << 20) {
    throw new SluiceConfigError("lease.maxLeaseUnits", `must be a whole number from 1 to 2^20; got ${describe(maxLeaseUnits)}`);
  }
  if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new SluiceConfigError("lease.maxKeys", `must be a whole number >= 1; got ${describe(maxKeys)}`);
  if (typeof refill !== "boolean") throw new SluiceConfigError("lease.refill", `must be true or false; got ${describe(refill)}`);
  if (given.locationHint === undefined) return { leaseMs, maxLeaseUnits, maxKeys, refill };
  checkLocationHint(given.locationHint, "lease.locationHint");
  return { leaseMs, maxLeaseUnits, maxKeys, refill, locationHint: given.locationHint };
}

/**
 * createLeasedStore wraps a durable store (createDurableStore) with leases.
 *
 * - decideLocally(checks, { nowMs, peek, ctx }): the Outcome when every check's key holds a live lease
 *   with units enough (marked `lease: true`), else null. No I/O in the decision: the fallback chain
 *   asks it first, so a lease keeps deciding while the object is unreachable, until it ends. When a
 *   lease would run out (or end) within two of the object's timeouts, it asks for the next one in the
 *   background (ctx.waitUntil when the request has a ctx).
 * - decideRemotely(checks, options): the object decides, and lends to the checks' keys that are warm
 *   here; unused units of ended leases go back with the call.
 * - decide(checks, options): decideLocally, else decideRemotely.
 * `counters` is live: round trips, refills, leases granted, units lent / used here / given back / stranded.
 * `clock` (ms) times the round trips that size the refills; default the wall clock.
 * @param {{durable: DurableStore, clock?: () => number, renewAheadMs?: number} & LeaseOptions} options
 * @returns {LeasedStore}
 */
export function createLeasedStore(options) {
  // renewAheadMs (a regional object's): renew a lease this much earlier still, so that what it passes
  // on lasts the isolates' lease length.
  const { durable, clock = wallClockMs, renewAheadMs = 0 } = options;
  if (durable === null || typeof durable !== "object" || typeof durable.decide !== "function" || typeof durable.objectOf !== "function") {
    throw new SluiceConfigError("durable", `must be a store from createDurableStore; got ${describe(durable)}`);
  }
  if (typeof clock !== "function") throw new SluiceConfigError("clock", `must be a function returning ms; got ${describe(clock)}`);
  const { leaseMs, maxLeaseUnits, maxKeys, refill: refillAhead } = /** @type {{leaseMs: number, maxLeaseUnits: number, maxKeys: number, refill: boolean}} */ (checkLeaseOptions({
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    maxLeaseUnits: options.maxLeaseUnits ?? DEFAULT_MAX_LEASE_UNITS,
    maxKeys: options.maxKeys ?? DEFAULT_MAX_KEYS,
    refill: options.refill ?? true,
  }));

  /** @type {LeaseCounters} */
  const counters = {
    roundTrips: 0,
    refills: 0,
    leasedDecisions: 0,
    leasesGranted: 0,
    leasesAhead: 0,
    bridgedDecisions: 0,
    unitsLent: 0,
    leasesExpired: 0,
    unitsReturned: 0,
    unitsStranded: 0,
    unitsPassedOn: 0,
  };

  // "rule id\nkey" -> what this isolate knows of the key: its rate here and the leases it holds
  // (`held`: { units, startMs, deadlineMs, expiresAtMs, endsWithWindow }, earliest deadline first; a
  // lease lent ahead holds units from startMs on). Leases are never merged: each ends, and goes back,
  // by its own end (a sliding log takes units back by it).
  /** @type {Map<string, KeyEntry>} */
  const keys = new Map();
  // object name -> [{ rule, key, units, expiresAtMs }] waiting for the next call to that object.
  /** @type {Map<string, GiveBack[]>} */
  const returns = new Map();
  // Per object: its measured round trip, which says how early to ask for the next lease.
  const roundTrips = new RoundTrips();

  /** @param {Pick<StoreCheck, "rule" | "key">} check @returns {string} */
  function idOf(check) {
    return `${check.rule.id}\n${check.key}`;
  }

  /** @param {Pick<StoreCheck, "rule" | "key">} check @param {number} nowMs @param {number} count @returns {KeyEntry} */
  function entryOf(check, nowMs, count = 1) {
    const id = idOf(check);
    let entry = keys.get(id);
    if (entry === undefined) {
      if (keys.size >= maxKeys) dropOldest();
      entry = { rule: check.rule, key: check.key, ...freshDemand(nowMs), held: [], remaining: 0, resetAtMs: 0, askingUntilMs: 0, refilling: null, quietUntilMs: 0 };
      keys.set(id, entry);
    }
    if (count > 0) noteRequest(entry, nowMs, leaseMs, count);
    return entry;
  }

  function dropOldest() {
    const oldest = keys.entries().next().value;
    if (oldest === undefined) return;
    const [id, entry] = oldest;
    keys.delete(id);
    for (const lease of entry.held) if (lease.units > 0) giveBackLater(entry, lease);
    entry.held = [];
  }

  // The units the key's live leases hold at nowMs (a lease lent ahead: once it has started); ended
  // leases go back (giveBackLater).
  /** @param {KeyEntry} entry @param {number} nowMs @returns {number} */
  function unitsHeld(entry, nowMs) {
    let units = 0;
    let ended = false;
    for (const lease of entry.held) {
      if (nowMs >= lease.deadlineMs) {
        // Kept, but not counted, while it bridges to the next window's lease (bridgeOf).
        if (bridgeOf(entry, lease, nowMs) !== null) continue;
        if (lease.units > 0) giveBackLater(entry, lease);
        ended = true;
      } else if (nowMs >= lease.startMs) {
        units += lease.units;
      }
    }
    if (ended) entry.held = entry.held.filter((lease) => nowMs < lease.deadlineMs || bridgeOf(entry, lease, nowMs) !== null);
    return units;
  }

  // Around a window's start, between the end here of a lease cut at that window's end (timed early by
  // its call's way out) and the start here of the one lent ahead from the next window (timed late by
  // its answer's way back), the isolate cannot tell which window the object is in: about a round trip.
  // A request there spends one unit of each: whichever window it falls in at the object, a unit
  // charged to that window covers it (the other is stranded). `lease` bridges when its deadline has
  // passed here, units are left, and a lease lent ahead from the window its own ends at has not
  // started here: that lease, or null.
  /** @param {KeyEntry} entry @param {HeldLease} lease @param {number} nowMs @returns {HeldLease | null} */
  function bridgeOf(entry, lease, nowMs) {
    if (!lease.endsWithWindow || lease.units === 0 || nowMs < lease.deadlineMs) return null;
    for (const next of entry.held) if (nowMs < next.startMs && next.startsAtMs === lease.expiresAtMs && next.units > 0) return next;
    return null;
  }

  // The units a request can spend across a window's start (bridgeOf): the pair and how many.
  /** @param {KeyEntry} entry @param {number} nowMs @returns {{ lease: HeldLease, next: HeldLease, units: number } | null} */
  function bridgeUnits(entry, nowMs) {
    for (const lease of entry.held) {
      const next = bridgeOf(entry, lease, nowMs);
      if (next !== null) return { lease, next, units: Math.min(lease.units, next.units) };
    }
    return null;
  }

  // The units of leases lent ahead that have not started yet (they hold the key's next window).
  /** @param {KeyEntry} entry @param {number} nowMs @returns {number} */
  function unitsComing(entry, nowMs) {
    let units = 0;
    for (const lease of entry.held) if (nowMs < lease.startMs) units += lease.units;
    return units;
  }

  // Spends `cost` units at nowMs, from the started lease that ends first.
  /** @param {KeyEntry} entry @param {number} cost @param {number} nowMs */
  function spend(entry, cost, nowMs) {
    let left = cost;
    for (const lease of entry.held) {
      if (nowMs < lease.startMs) continue;
      const taken = Math.min(left, lease.units);
      lease.units -= taken;
      left -= taken;
      if (left === 0) break;
    }
    entry.held = entry.held.filter((lease) => lease.units > 0 || lease.out > 0);
  }

  // An ended (or dropped) lease's unused units: back to the object with the next call to it. A bucket's
  // are not taken back (the bucket drains them by itself; sluice/lease.hpp): counted as stranded.
  /** @param {Pick<KeyEntry, "rule" | "key">} entry @param {Pick<HeldLease, "units" | "expiresAtMs">} lease */
  function giveBackLater(entry, lease) {
    counters.leasesExpired++;
    const { units, expiresAtMs } = lease;
    lease.units = 0;
    if (!RETURNING_ALGORITHMS.includes(entry.rule.algorithm)) {
      counters.unitsStranded += units;
      return;
    }
    const name = durable.objectOf(entry.key);
    let list = returns.get(name);
    if (list === undefined) returns.set(name, (list = []));
    if (list.length >= MAX_PENDING_RETURNS) counters.unitsStranded += units;
    else list.push({ rule: entry.rule, key: entry.key, units, expiresAtMs });
  }

  // Settles the give-backs a call carried: what the object took back, and what it could not.
  /** @param {GiveBack[] | undefined} giveBack @param {readonly number[] | null | undefined} returned */
  function settleReturns(giveBack, returned) {
    if (giveBack === undefined) return;
    for (let i = 0; i < giveBack.length; i++) {
      const back = returned?.[i] ?? 0;
      counters.unitsReturned += back;
      counters.unitsStranded += giveBack[i].units - back;
    }
  }

  /** @param {GiveBack[] | undefined} giveBack */
  function strandReturns(giveBack) {
    if (giveBack !== undefined) for (const g of giveBack) counters.unitsStranded += g.units;
  }

  /** @param {string} name @returns {GiveBack[] | undefined} */
  function takeReturns(name) {
    const giveBack = returns.get(name);
    if (giveBack !== undefined) returns.delete(name);
    return giveBack;
  }

  // A key asks for one lease at a time. A call that never answers (lost on the way) must not stop it
  // asking for good: the ask lapses after twice the object's timeout (a late answer's lease is still
  // kept, timed from before its call was sent). Returns the ask's mark, for doneAsking.
  /** @param {KeyEntry} entry @param {string} name @param {number} nowMs @returns {number} */
  function askFor(entry, name, nowMs) {
    entry.askingUntilMs = nowMs + 2 * roundTrips.timeoutMs(name);
    return entry.askingUntilMs;
  }

  /** @param {KeyEntry} entry @param {number} asking */
  function doneAsking(entry, asking) {
    if (entry.askingUntilMs === asking) entry.askingUntilMs = 0;
  }

  // How many units to ask for: the key's rate here times the lease's length; none for a cold key.
  /** @param {KeyEntry} entry @param {number} nowMs @returns {number} */
  function wish(entry, nowMs) {
    // A blocking rule is never leased: a denial must reach the object, where it blocks the key.
    if (nowMs < entry.askingUntilMs || !LENDING_ALGORITHMS.includes(entry.rule.algorithm) || entry.rule.blockMs !== undefined) return 0;
    return unitsWanted(entry, nowMs, leaseMs, maxLeaseUnits);
  }

  /** @param {readonly StoreCheck[]} checks @param {StoreOptions} decideOptions @returns {Outcome | null} */
  function decideLocally(checks, decideOptions) {
    if (decideOptions.peek === true) return null;
    // The chain and the limiter give every decide the isolate's clock.
    const { nowMs } = /** @type {TimedStoreOptions} */ (decideOptions);
    const count = checks.length;
    const entries = new Array(count);
    let covered = true;
    for (let i = 0; i < count; i++) {
      const entry = entryOf(checks[i], nowMs);
      entries[i] = entry;
      const held = unitsHeld(entry, nowMs);
      const enough = held >= checks[i].cost || (held === 0 && (bridgeUnits(entry, nowMs)?.units ?? 0) >= checks[i].cost);
      if (!enough || entries.indexOf(entry) !== i) covered = false;
    }
    if (!covered) return null;
    const decisions = new Array(count);
    let deciding = 0;
    for (let i = 0; i < count; i++) {
      const entry = entries[i];
      const bridge = unitsHeld(entry, nowMs) === 0 ? bridgeUnits(entry, nowMs) : null;
      if (bridge === null) {
        spend(entry, checks[i].cost, nowMs);
      } else {
        bridge.lease.units -= checks[i].cost;
        bridge.next.units -= checks[i].cost;
        counters.bridgedDecisions++;
        // One of the two spends admits no one (whichever window the object is in, the other's unit is
        // charged and never used): stranded, so that lent = used + returned + stranded + held.
        counters.unitsStranded += checks[i].cost;
      }
      // What is left: these leases' units and what the object had left when it lent the last (others
      // may have used some since: an upper bound, as any isolate's view of a shared count is).
      decisions[i] = { allowed: true, limit: entry.rule.limit, remaining: unitsHeld(entry, nowMs) + entry.remaining, resetMs: Math.max(0, entry.resetAtMs - nowMs), retryAfterMs: 0 };
      if (decisions[i].remaining < decisions[deciding].remaining) deciding = i;
    }
    counters.leasedDecisions++;
    for (const entry of entries) refillIfRunningOut(entry, nowMs, decideOptions);
    const { limit, remaining, resetMs } = decisions[deciding];
    /** @type {Outcome} */
    const outcome = { allowed: true, limit, remaining, resetMs, retryAfterMs: 0, decidingCheck: deciding, checks: decisions, store: "durable", lease: true };
    return outcome;
  }

  // Asks for the key's next lease in the background when what it holds would run out, or end, before
  // an answer could come back (REFILL_AHEAD_TIMEOUTS of the object's timeout). A lease that ends with
  // its key's window is renewed by one lent ahead from the next window (docs/leases.md): the ask says
  // how near a window's end the object should lend from the next one (aheadOf).
  /** @param {KeyEntry} entry @param {number} nowMs @param {StoreOptions} decideOptions */
  function refillIfRunningOut(entry, nowMs, decideOptions) {
    if (!refillAhead || nowMs < entry.askingUntilMs || nowMs < entry.quietUntilMs || typeof durable.refill !== "function") return;
    if (!LENDING_ALGORITHMS.includes(entry.rule.algorithm)) return;
    const units = unitsHeld(entry, nowMs);
    const rate = rateOf(entry, nowMs);
    const leadMs = aheadOf(entry, nowMs);
    const spentSoon = units <= rate * refillAheadMs(entry) + 1;
    // Near its window's end, the next window's units (unless they are here already, or what is held
    // would not last until the end: then this window's first).
    const windowEndsInMs = windowEndOf(entry, nowMs) - nowMs;
    const lastsTheWindow = units >= rate * windowEndsInMs;
    const askAhead = windowEndsInMs <= leadMs && unitsComing(entry, nowMs) === 0 && (lastsTheWindow || !spentSoon);
    /** @type {any} */
    let last = null;
    for (const lease of entry.held) if (nowMs >= lease.startMs) last = lease;
    const endsSoon = last === null || (!last.endsWithWindow && last.deadlineMs - nowMs <= leadMs);
    if (!askAhead && !spentSoon && !endsSoon) return;
    const wanted = wish(entry, nowMs);
    if (wanted === 0) return;
    refill(entry, wanted, nowMs, decideOptions, askAhead);
  }

  // When the key's window ends here, as far as this isolate knows: the end of a started lease the
  // object cut at its window's end (no later than the window's end at the object); Infinity if none.
  /** @param {KeyEntry} entry @param {number} nowMs @returns {number} */
  function windowEndOf(entry, nowMs) {
    let end = Infinity;
    for (const lease of entry.held) if (lease.endsWithWindow && nowMs >= lease.startMs) end = Math.min(end, lease.deadlineMs);
    return end;
  }

  // How long before the answer is needed to ask: REFILL_AHEAD_TIMEOUTS of the object's timeout (its
  // measured round trip, round-trip.js).
  /** @param {KeyEntry} entry @returns {number} */
  function refillAheadMs(entry) {
    return REFILL_AHEAD_TIMEOUTS * roundTrips.timeoutMs(durable.objectOf(entry.key));
  }

  // How long before a lease ends to ask for the next one: the refill's lead, plus the gap to the next
  // request (asked only when a request comes, the next may come a whole gap, 1 / rate, later).
  /** @param {KeyEntry} entry @param {number} nowMs @returns {number} */
  function aheadOf(entry, nowMs) {
    const rate = rateOf(entry, nowMs);
    const gapMs = rate > 0 ? 1 / rate : Infinity;
    return refillAheadMs(entry) + Math.min(gapMs, leaseMs / 2) + renewAheadMs;
  }

  // The object lends from the next window when the key's window ends within this long of its clock
  // (lease.hpp): aheadOf, plus one timeout, since the isolate knows the window's end only from a lease's
  // deadline, which is early by that call's trip.
  /** @param {KeyEntry} entry @param {number} nowMs @returns {number} */
  function windowAheadMs(entry, nowMs) {
    return Math.ceil(aheadOf(entry, nowMs) + roundTrips.timeoutMs(durable.objectOf(entry.key)));
  }

  /** @param {KeyEntry} entry @param {number} nowMs @returns {number} */
  function rateOf(entry, nowMs) {
    const elapsed = Math.max(nowMs - entry.since, leaseMs / 8);
    return Math.max(entry.lastRate, entry.seen / elapsed);
  }

  // The background call: the object lends (and takes back what waits to go back), decides nothing.
  // `ahead`: asked near the key's window's end, for the next window's units (lease.hpp).
  /** @param {KeyEntry} entry @param {number} wanted @param {number} sentAtMs @param {StoreOptions} decideOptions @param {boolean} [ahead] @returns {Promise<void>} */
  function refill(entry, wanted, sentAtMs, decideOptions, ahead = false) {
    const name = durable.objectOf(entry.key);
    const aheadMs = ahead ? windowAheadMs(entry, sentAtMs) : 0;
    const asking = askFor(entry, name, sentAtMs);
    counters.roundTrips++;
    counters.refills++;
    const giveBack = takeReturns(name);
    const started = clock();
    const call = Promise.resolve()
      .then(() =>
        /** @type {Required<DurableStore>} */ (durable).refill([{ rule: entry.rule, key: entry.key, cost: 1 }], {
          env: decideOptions.env,
          lend: { wanted: [wanted], leaseMs, aheadMs },
          giveBack,
        }),
      )
      .then(
        (answer) => {
          const tookMs = clock() - started;
          roundTrips.sample(name, tookMs);
          settleReturns(giveBack, answer.returned);
          const lease = answer.leases[0];
          if (lease === null || lease === undefined) {
            // Nothing to lend (the key is near its limit): the next request decides at the object;
            // no more refills until the key could have quota again, or a lease's length.
            entry.quietUntilMs = sentAtMs + Math.min(Math.max(answer.resetMs?.[0] ?? 0, leaseMs / 8), leaseMs);
            return;
          }
          const kept = keepLease(entry, lease, sentAtMs, sentAtMs + tookMs, sentAtMs + answer.resetMs[0]);
          // Asked near the window's end, and lent from that window all the same: this store does not
          // lend ahead (leases over Redis, a regional object) or the next window has no room to. Asking
          // again before the window ends would get the same: the next request after it asks.
          if (ahead && kept !== null && kept.endsWithWindow && kept.startMs === -Infinity && kept.deadlineMs - sentAtMs <= aheadMs) entry.quietUntilMs = kept.deadlineMs;
        },
        () => {
          // The refill failed: its give-backs are stranded (never admitted twice), and the key's
          // next request asks the object as usual.
          strandReturns(giveBack);
        },
      )
      .finally(() => {
        doneAsking(entry, asking);
        if (entry.refilling === call) entry.refilling = null;
      });
    entry.refilling = call;
    decideOptions.ctx?.waitUntil?.(call);
    return call;
  }

  // Local when a lease covers the request, else a call to the object.
  /** @param {readonly StoreCheck[]} checks @param {StoreOptions} decideOptions @returns {Outcome | Promise<Outcome>} */
  function decide(checks, decideOptions = /** @type {StoreOptions} */ ({})) {
    return decideLocally(checks, decideOptions) ?? decideRemotely(checks, decideOptions);
  }

  /** @param {readonly StoreCheck[]} checks @param {StoreOptions} decideOptions @returns {Promise<Outcome>} */
  async function decideRemotely(checks, decideOptions = /** @type {StoreOptions} */ ({})) {
    const { nowMs } = decideOptions;
    const peek = decideOptions.peek === true;
    const name = durable.objectOf(checks[0].key);
    const oneObject = checks.every((/** @type {StoreCheck} */ c) => durable.objectOf(c.key) === name);
    /** @type {Array<[KeyEntry, number]>} */
    const asked = [];
    let lend;
    if (!peek && oneObject && typeof nowMs === "number") {
      const wanted = new Array(checks.length).fill(0);
      for (let i = 0; i < checks.length; i++) {
        const entry = keys.get(idOf(checks[i]));
        if (entry === undefined) continue;
        // Ask only when these leases cannot serve the next request anyway (for this window: the
        // background refill asks for the next one, lent ahead).
        if (unitsHeld(entry, nowMs) >= checks[i].cost) continue;
        wanted[i] = wish(entry, nowMs);
        if (wanted[i] > 0) asked.push([entry, askFor(entry, name, nowMs)]);
      }
      if (asked.length > 0) lend = { wanted, leaseMs };
    }
    const giveBack = oneObject ? takeReturns(name) : undefined;
    counters.roundTrips++;
    const started = clock();
    /** @type {ObjectOutcome & Outcome} */
    let outcome;
    try {
      outcome = /** @type {ObjectOutcome & Outcome} */ (await durable.decide(checks, /** @type {StoreOptions} */ ({ ...decideOptions, lend, giveBack })));
    } catch (error) {
      strandReturns(giveBack);
      throw error;
    } finally {
      for (const [entry, asking] of asked) doneAsking(entry, asking);
    }
    const tookMs = clock() - started;
    if (oneObject) roundTrips.sample(name, tookMs);
    settleReturns(giveBack, outcome.returned);
    if (outcome.leases !== undefined) keep(checks, outcome, /** @type {number} */ (nowMs), /** @type {number} */ (nowMs) + tookMs); // lent only when nowMs is a number
    delete outcome.returned;
    delete outcome.leases;
    return outcome;
  }

  // Keeps the leases of a call's answer, timed on this isolate's clock from before the call was sent
  // (their ends) and from after its answer came (a lease lent ahead's start).
  /** @param {readonly StoreCheck[]} checks @param {ObjectOutcome} outcome @param {number} sentAtMs @param {number} answeredAtMs */
  function keep(checks, outcome, sentAtMs, answeredAtMs) {
    for (let i = 0; i < checks.length; i++) {
      const lease = /** @type {(Lease | null)[]} */ (outcome.leases)[i];
      if (lease === null || lease === undefined) continue;
      const entry = keys.get(idOf(checks[i]));
      keepLease(entry, lease, sentAtMs, answeredAtMs, sentAtMs + outcome.checks[i].resetMs);
    }
  }

  // One lease: it ends here validForMs after sentAtMs, a reading taken before the call was sent, so it
  // ends here no later than at the object, whatever the two clocks read (only their rates must agree).
  // A lease lent ahead starts here startsInMs after answeredAtMs, a reading taken after the answer
  // came, so it starts here no earlier than the window it was charged to starts at the object.
  /** @param {KeyEntry | undefined} entry @param {Omit<Lease, "endsWithWindow" | "startsAtMs" | "startsInMs"> & { endsWithWindow?: boolean, startsAtMs?: number, startsInMs?: number }} lease @param {number} sentAtMs @param {number} answeredAtMs @param {number} resetAtMs @returns {HeldLease | null} */
  function keepLease(entry, lease, sentAtMs, answeredAtMs, resetAtMs) {
    counters.leasesGranted++;
    counters.unitsLent += lease.units;
    if (entry === undefined || keys.get(`${entry.rule.id}\n${entry.key}`) !== entry) {
      // Dropped while the call was out: nothing will use these units.
      counters.unitsStranded += lease.units;
      return null;
    }
    const startsInMs = typeof lease.startsInMs === "number" && Number.isFinite(lease.startsInMs) && lease.startsInMs > 0 ? lease.startsInMs : 0;
    if (startsInMs > 0) counters.leasesAhead++;
    const held = {
      units: lease.units,
      startMs: startsInMs > 0 ? answeredAtMs + startsInMs : -Infinity,
      // A lease lent ahead: its window's start on the object's clock (bridgeOf pairs it with the lease
      // that ends there).
      startsAtMs: startsInMs > 0 ? lease.startsAtMs : undefined,
      deadlineMs: sentAtMs + lease.validForMs,
      expiresAtMs: lease.expiresAtMs,
      // Cut short by the key's window: a later lease would end there too (the object says so; a
      // regional object passes on its own lease's word).
      endsWithWindow: lease.endsWithWindow ?? (WINDOW_LENDING_ALGORITHMS.includes(entry.rule.algorithm) && lease.validForMs < leaseMs),
      // Units of this lease passed on to others (a regional object's sub-leases), not yet given back.
      out: 0,
    };
    let at = entry.held.length;
    while (at > 0 && entry.held[at - 1].deadlineMs > held.deadlineMs) at--;
    entry.held.splice(at, 0, held);
    // A lease lent ahead says what the next window has left: decisions until it starts keep this one's.
    if (held.startMs === -Infinity) {
      entry.remaining = lease.remaining;
      entry.resetAtMs = resetAtMs;
    }
    return held;
  }

  /**
   * reset forgets the checks' keys in the object, and this isolate's leases of them (their units
   * were charged to the state the reset forgets). Leases other isolates hold stay good until they end.
   * @param {readonly StoreCheck[]} checks
   * @param {object} resetOptions
   */
  async function reset(checks, resetOptions) {
    for (const check of checks) {
      const entry = keys.get(idOf(check));
      if (entry !== undefined) entry.held = [];
    }
    await durable.reset(checks, resetOptions);
  }

  // A regional object's side (regional-lender.js): it holds leases from the keys' home objects like an
  // isolate does, and passes parts of them on to the isolates near it.

  /**
   * lendOn passes up to `wanted` units of the key's leases on to an isolate, from the lease that ends
   * last, at most half of what it holds (so that the isolates near it share it), and refills from the
   * home object in the background when what is left runs low. The part keeps the lease's end (the
   * home object's clock) and ends here no later than the lease does: validForMs is what is left of it
   * on this object's clock, which the isolate times from before it sent its call. Null when nothing
   * is held.
   * @param {StoreCheck} check @param {number} wanted @param {number} nowMs @param {StoreOptions} decideOptions
   */
  function lendOn(check, wanted, nowMs, decideOptions) {
    const entry = entryOf(check, nowMs, 0);
    const held = unitsHeld(entry, nowMs);
    /** @type {any} */
    let from = null;
    // Passed on only from a lease that has started (one lent ahead waits for its window).
    for (const lease of entry.held) if (lease.units > 0 && nowMs >= lease.startMs && (from === null || lease.deadlineMs >= from.deadlineMs)) from = lease;
    /** @type {any} */
    let part = null;
    if (from !== null && wanted > 0) {
      const units = Math.min(wanted, Math.ceil(from.units / 4));
      from.units -= units;
      from.out += units;
      noteRequest(entry, nowMs, leaseMs, units);
      counters.unitsPassedOn += units;
      part = { units, expiresAtMs: from.expiresAtMs, validForMs: from.deadlineMs - nowMs, remaining: held - units + entry.remaining, endsWithWindow: from.endsWithWindow };
    }
    refillIfRunningOut(entry, nowMs, decideOptions);
    return part;
  }

  /**
   * takeBackLent takes back units an isolate did not use ({ rule, key, units, expiresAtMs } each): into
   * the lease they came from while it lasts here (at most what was passed on from it), else on towards
   * the home object with this object's next call to it. Returns how many of each were taken.
   * @param {ReadonlyArray<{ rule: StoreCheck["rule"], key: string, units: number, expiresAtMs: number }>} giveBack
   * @param {number} nowMs
   */
  function takeBackLent(giveBack, nowMs) {
    if (!Array.isArray(giveBack)) throw new TypeError("giveBack must be an array");
    return giveBack.map(({ rule, key, units, expiresAtMs }) => {
      if (!Number.isInteger(units) || units < 1 || typeof rule?.id !== "string" || typeof key !== "string") return 0;
      const entry = keys.get(`${rule.id}\n${key}`);
      // Leases with one end are interchangeable (one window, one end): units go back into any of them,
      // each up to what it passed on.
      let back = 0;
      for (const lease of entry?.held ?? []) {
        if (lease.expiresAtMs !== expiresAtMs || nowMs >= lease.deadlineMs) continue;
        const into = Math.min(units - back, lease.out);
        lease.out -= into;
        lease.units += into;
        back += into;
      }
      // What came back unused was not demand.
      if (entry !== undefined) entry.seen = Math.max(0, entry.seen - back);
      // The rest (their lease ended here too) go home, which takes back only what its window still
      // counts. They were passed on, so they are in no lease here: nothing goes back twice.
      if (back < units) giveBackLater(entry ?? { rule, key }, { units: units - back, expiresAtMs });
      return units;
    });
  }

  /**
   * topUp makes sure the key holds units to pass on: when it holds none, it asks the home object for a
   * lease of at least `wanted` (or the key's rate here over a lease) and waits for the answer. False
   * when it asked nothing (the home object has just said it has nothing to lend).
   * @param {StoreCheck} check @param {number} wanted @param {number} nowMs @param {StoreOptions} decideOptions
   */
  async function topUp(check, wanted, nowMs, decideOptions) {
    const entry = entryOf(check, nowMs, 0);
    if (unitsHeld(entry, nowMs) > 0) return true;
    if (entry.refilling !== null) {
      await entry.refilling;
      return true;
    }
    // The home object just said it has nothing to lend: no asking again until the quiet time is over.
    if (typeof durable.refill !== "function" || nowMs < entry.quietUntilMs) return false;
    // A regional lease serves many isolates: at least an eighth of the largest (one isolate's largest
    // lease; the home object still lends at most a quarter of what the key has left). Smaller, the
    // first lease ran short before the key's rate here was known (a rate is measured over at least an
    // eighth of a lease), and the region crossed twice more in its first second to learn it.
    const units = Math.min(maxLeaseUnits, Math.max(wanted, unitsWanted(entry, nowMs, leaseMs, maxLeaseUnits), Math.ceil(maxLeaseUnits / FIRST_REGIONAL_LEASE_DIVISOR)));
    await refill(entry, units, nowMs, decideOptions);
    return true;
  }

  /**
   * refillsLanding is a promise of the refills on their way for the checks' keys that hold no units
   * now, or null when there is none.
   * @param {readonly StoreCheck[]} checks
   */
  function refillsLanding(checks) {
    const landing = [];
    for (const check of checks) {
      const entry = keys.get(idOf(check));
      if (entry !== undefined && entry.refilling !== null && entry.held.every((/** @type {HeldLease} */ lease) => lease.units < check.cost)) landing.push(entry.refilling);
    }
    return landing.length === 0 ? null : Promise.all(landing);
  }

  /**
   * holds reports whether the checks' keys hold units enough here for one request (no request noted).
   * @param {readonly StoreCheck[]} checks @param {number} nowMs
   */
  function holds(checks, nowMs) {
    return checks.every((check) => {
      const entry = keys.get(idOf(check));
      return entry !== undefined && unitsHeld(entry, nowMs) >= check.cost;
    });
  }

  /** resetInMs is when the key is back to its full quota, as the home object last said (0 if unknown). @param {StoreCheck} check @param {number} nowMs @returns {number} */
  function resetInMs(check, nowMs) {
    const entry = keys.get(idOf(check));
    return entry === undefined ? 0 : Math.max(0, entry.resetAtMs - nowMs);
  }

  return {
    name: "durable",
    counters,
    decide,
    decideLocally,
    decideRemotely,
    lendOn,
    takeBackLent,
    topUp,
    refillsLanding,
    holds,
    resetInMs,
    reset,
    blockList: durable.blockList,
    /** Leases live in this isolate's JS heap (at most maxKeys keys), not in the core's tables. */
    isolateTables: () => [],
    isBound: (env) => durable.isBound(env),
  };
}
