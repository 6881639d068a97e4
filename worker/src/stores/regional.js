// The regional tier, the isolate's side: a durable store client whose calls go to a regional object
// placed near this isolate (Durable Objects' locationHint) instead of the keys' home object. The
// regional object borrows from the home object and lends on (regional-lender.js); leases.js wraps this
// client exactly as it wraps createDurableStore's, so a far isolate's refill is a nearby round trip.
// A request whose keys live in several home objects goes to them directly, as without the tier.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { resolveBinding } from "./binding.js";
import { checkTimeout, withDeadline } from "./deadline.js";
import { createDurableStore } from "./durable.js";
import { DEFAULT_LEASE_MS, DEFAULT_MAX_LEASE_UNITS } from "./leases.js";
import { LOCATION_HINTS, checkLocationHint } from "./location-hints.js";

/** @import { Outcome, StoreCheck, StoreOptions } from "./store.js" */
/** @import { ObjectOutcome } from "./durable-object.js" */
/** @import { DurableStore, RefillAnswer } from "./durable.js" */
/**
 * A regional object's methods this store calls, as its RPC stub offers them.
 * @typedef {{
 *   decideInRegion(checks: StoreCheck[], call: Record<string, unknown>): Promise<ObjectOutcome>;
 *   refillInRegion(checks: StoreCheck[], call: Record<string, unknown>): Promise<RefillAnswer>;
 * }} RegionalStub
 */


/**
 * @typedef {object} RegionalStoreOptions
 * @property {string} binding The name in env of the namespace bound to SluiceDurableObject (the regional
 *   object reaches the keys' home objects through the same binding, so it must be a name).
 * @property {string | (() => string | undefined)} locationHint Where this isolate's regional object is
 *   placed: one of LOCATION_HINTS, or a function asked at each call (undefined: no regional object,
 *   the home object directly).
 * @property {number | "key"} [shards] As createDurableStore's. Default 1.
 * @property {string} [name] As createDurableStore's. Default "sluice".
 * @property {number} [timeoutMs] Reject with DeadlineError after this many ms. Default: wait.
 * @property {number} [leaseMs] The regional object's leases' length (use the isolate's). Default 5000.
 * @property {number} [maxLeaseUnits] The isolate's largest lease (the regional object's are 8 times it). Default 1000.
 */

/**
 * createRegionalStore returns a durable store client that decides and lends through a regional
 * object near this isolate. Wrap it with createLeasedStore: its decisions come from the leases the
 * regional object passes on, and its refills cross only to the regional object.
 * @param {RegionalStoreOptions} options
 * @returns {DurableStore}
 */
export function createRegionalStore(options = /** @type {any} */ ({})) {
  const { binding, locationHint, shards = 1, name = "sluice", timeoutMs = Infinity, leaseMs = DEFAULT_LEASE_MS, maxLeaseUnits = DEFAULT_MAX_LEASE_UNITS } = options;
  if (typeof binding !== "string" || binding === "") {
    throw new SluiceConfigError("binding", `must be the binding's name in env (the regional object reaches the home objects through it); got ${describe(binding)}`);
  }
  checkLocationHint(locationHint, "locationHint");
  checkTimeout(timeoutMs, "timeoutMs");
  const home = createDurableStore({ binding, shards, name, timeoutMs });
  const settings = { binding, name, shards, leaseMs, maxLeaseUnits };

  function hintNow() {
    const hint = typeof locationHint === "function" ? locationHint() : locationHint;
    if (hint === undefined) return undefined;
    if (!LOCATION_HINTS.includes(/** @type {string} */ (hint))) throw new SluiceConfigError("locationHint", `returned ${describe(hint)}; must be one of ${LOCATION_HINTS.join(", ")} or undefined`);
    return hint;
  }

  /** objectOf names the object this isolate calls for `key`: its regional object, or the home one. @param {string} key @returns {string} */
  function objectOf(key) {
    const hint = hintNow();
    return hint === undefined ? home.objectOf(key) : `${name}/region/${hint}/${home.objectOf(key)}`;
  }

  // The regional stub of the checks' home object, or null when there is none for this call.
  /** @param {readonly StoreCheck[]} checks @param {unknown} env @returns {RegionalStub | null} */
  function regionalStub(checks, env) {
    const hint = hintNow();
    if (hint === undefined) return null;
    const homeName = home.objectOf(checks[0].key);
    if (!checks.every((/** @type {StoreCheck} */ check) => home.objectOf(check.key) === homeName)) return null;
    const namespace = /** @type {any} */ (resolveBinding(binding, env, "durable store binding"));
    return namespace.get(namespace.idFromName(`${name}/region/${hint}/${homeName}`), { locationHint: hint });
  }

  /**
   * @param {readonly StoreCheck[]} checks
   * @param {StoreOptions & { lend?: { wanted: number[], leaseMs: number }, giveBack?: unknown[] }} [decideOptions]
   */
  function decide(checks, decideOptions = {}) {
    if (!Array.isArray(checks) || checks.length === 0) throw new RangeError("checks must be a non-empty array");
    const stub = regionalStub(checks, decideOptions.env);
    if (stub === null) return home.decide(checks, decideOptions);
    /** @type {Record<string, unknown>} */
    const call = { ...settings, peek: decideOptions.peek === true };
    if (decideOptions.lend !== undefined) call.lend = { wanted: decideOptions.lend.wanted };
    if (decideOptions.giveBack !== undefined && decideOptions.giveBack.length > 0) call.giveBack = decideOptions.giveBack;
    const work = stub.decideInRegion(plain(checks), call).then((/** @type {ObjectOutcome} */ outcome) => /** @type {Outcome} */ ({ ...outcome, store: "durable" }));
    // Given a promise, withDeadline answers a promise.
    return /** @type {Promise<Outcome>} */ (withDeadline(work, timeoutMs, "the regional Durable Object"));
  }

  /**
   * @param {readonly StoreCheck[]} checks
   * @param {StoreOptions & { lend: { wanted: number[], leaseMs: number }, giveBack?: unknown[] }} refillOptions
   */
  function refill(checks, refillOptions) {
    const stub = regionalStub(checks, refillOptions.env);
    if (stub === null) return home.refill(checks, refillOptions);
    /** @type {Record<string, unknown>} */
    const call = { ...settings, lend: { wanted: refillOptions.lend.wanted } };
    if (refillOptions.giveBack !== undefined && refillOptions.giveBack.length > 0) call.giveBack = refillOptions.giveBack;
    return /** @type {Promise<RefillAnswer>} */ (withDeadline(stub.refillInRegion(plain(checks), call), timeoutMs, "the regional Durable Object"));
  }

  return {
    name: /** @type {const} */ ("durable"),
    counters: home.counters,
    decide,
    refill,
    /** reset forgets the keys at their home objects; what regional objects and isolates hold stays good until it ends. */
    reset: home.reset,
    blockList: home.blockList,
    objectOf,
    // The chain's timeouts and late-answer reconciliation (chain.js) are the home objects' client's: a
    // regional object's answer carries no undo tokens, so a late one is not taken back (docs/leases.md).
    get roundTrip() {
      return home.roundTrip;
    },
    timeoutFor: home.timeoutFor,
    timedOut: home.timedOut,
    takeBack: home.takeBack,
    isolateTables: () => /** @type {[]} */ ([]),
    /** @param {unknown} env */
    isBound: (env) => home.isBound(env),
  };
}

// Only the fields the object reads cross the RPC.
/** @param {readonly StoreCheck[]} checks @returns {StoreCheck[]} */
function plain(checks) {
  return checks.map(({ rule, key, cost }) => ({ rule, key, cost }));
}
