// The fallback chain: the primary store (the Durable Object) decides; when it throws or does not answer
// in time, KV decides if there is one, else the isolate's memory; when none can, `failMode` does.
// Every outcome says which store decided and, after a fallback, why.
//
// How long a store may take: a store that measures its round trips (the Durable Object store, per
// object: round-trip.js) says so itself (timeoutFor), so a far region waits for its far object and a
// near one gives up on a dead one soon; other stores get DEFAULT_TIMEOUT_MS; a `timeoutMs` number
// overrides both with one fixed timeout for every store.
//
// A slow answer is not a failure. A primary call that times out is not counted against its breaker
// yet: the chain decides without it, and waits (in the background, ctx.waitUntil) for the call to
// settle. If it answers late, that is a success, and its decision is reconciled with the one the
// chain gave (the answered decision wins): a charge the object made for a request the chain denied is
// undone; an admission the object denied is counted (`late.admittedUncounted`). Only a call that fails,
// or never answers within LATE_WINDOW (8 timeouts, 1 to 30 s), counts as a breaker failure.
//
// Every store of the chain has its own circuit breaker; once the breakers of failing stores are open,
// requests wait on them no more until one request probes each after its cooldown.
//
// A decision a fallback took is weaker than the primary's when it could admit what the primary would
// not (any fallback store, or failMode "open"): its `fallback.weakened` is true, and it is counted per
// deciding store (`weakened`), so it can be alerted on.
import { checkChainOptions } from "./chain/settings.js";
import { createChainState } from "./chain/state.js";
import { decideInOrder } from "./chain/steps.js";

export { DEFAULT_FAIL_MODE, DEFAULT_TIMEOUT_MS, LATE_WINDOW } from "./chain/settings.js";

// The chain's parts, one concept each (chain/): settings.js checks the options; state.js holds what
// a chain keeps; steps.js is the order of asking; ask.js one bounded call to one store; late-answers.js
// reconciles a slow primary's answer; weakened.js marks the decisions a fallback took; counters.js.
/** @import { BreakerOptions } from "./breaker.js" */
/** @import { IsolateTable, NormalizedRule, Outcome, Store, StoreCheck, TimedStoreOptions } from "./store.js" */

/**
 * @typedef {object} FallbackChainOptions
 * @property {Store} primary The store that should decide (normally the Durable Object store).
 * @property {Store | null} [kv] Decides when the primary cannot.
 * @property {Store | null} [memory] The isolate's store, tried after kv; leave it out to go straight to failMode. A fallback
 *   whose binding env lacks (isBound(env) false) is passed over.
 * @property {"open" | "closed"} [failMode] "open" admits and "closed" denies when no store answers. Default "open".
 * @property {number} [timeoutMs] How long each store may take before the next is asked, fixed. Default: each store's own
 *   (timeoutFor, from its measured round trips: the Durable Object store), else 50 ms.
 * @property {BreakerOptions | boolean} [breaker] After `failures` failures in a row of a store, skip that store for
 *   `cooldownMs`, then let one request probe it; every store of the chain has its own breaker with these settings.
 *   Default { failures: 5, cooldownMs: 10000 }; false turns them all off.
 * @property {number} [lateWindowMs] How long the chain still waits, in the background, for a primary call that timed out
 *   before counting it unanswered (a breaker failure). Default 8 timeouts, within 1 s to 30 s.
 * @property {number} [failClosedRetryAfterMs] retryAfterMs of a fail-closed denial. Default 1000.
 * @property {boolean} [preFilter] Deny keys the primary denied from this isolate until their retry time. Default true.
 * @property {number} [preFilterMaxKeys] The most denied keys remembered. Default 10000.
 * @property {(line: string) => void} [log] Where fallbacks are reported. Default console.warn.
 * @property {number} [logIntervalMs] Fallbacks are logged at most once per interval. Default 60000.
 */
/**
 * @typedef {object} FallbackChainCounters
 * @property {Record<string, number>} decided Decisions per store that took them; "failMode" when none could.
 * @property {number} fallbacks Decisions the primary did not take because it failed.
 * @property {number} preFiltered Denials answered from the isolate's memory of earlier denials.
 * @property {Record<string, number>} errors Per store: calls that threw or rejected.
 * @property {Record<string, number>} timeouts Per store: calls that did not answer within timeoutMs.
 * @property {number} circuitOpened Times a store's circuit breaker opened (every store of the chain has one).
 * @property {number} circuitSkipped Times a store was skipped because its breaker was open (a skipped primary counts among fallbacks too).
 * @property {Record<string, number>} circuitOpenedBy The same as circuitOpened, per store.
 * @property {Record<string, number>} circuitSkippedBy The same as circuitSkipped, per store.
 * @property {Record<string, number>} weakened Decisions taken by a fallback weaker than the primary (a fallback store, or
 *   failMode "open"), per store that took them ("failMode" for failMode "open").
 * @property {LateCounters} late What became of primary calls the chain stopped waiting for.
 */
/**
 * @typedef {object} LateCounters
 * @property {number} answered Calls that answered after the chain had decided without them (slow, not failed).
 * @property {number} agreed Late answers that agreed with the decision the chain gave.
 * @property {number} undone Charges of late admissions taken back because the chain had denied the request.
 * @property {number} undoMissed Charges of late admissions that could not be taken back (the key was charged since, a
 *   lease call, the object restarted): the store counts a denied request, which errs towards denying.
 * @property {number} admittedUncounted Requests the chain admitted (a weakened fallback) that the primary denied when its
 *   answer came: admitted beyond the primary's count.
 * @property {number} failed Calls that failed after the chain stopped waiting (breaker failures).
 * @property {number} unanswered Calls that never answered within the late window (breaker failures; the primary may or
 *   may not have charged them).
 */
/**
 * A store made of others. decide takes options.nowMs, the isolate's clock (the primary may keep its own).
 * @typedef {{
 *   readonly name: "chain";
 *   readonly counters: Readonly<FallbackChainCounters>;
 *   decide(checks: readonly StoreCheck[], options: TimedStoreOptions): Outcome | Promise<Outcome>;
 *   reset(checks: readonly StoreCheck[], options: TimedStoreOptions): Promise<void>;
 *   isolateTables(rule: NormalizedRule): IsolateTable[];
 *   readonly blockList?: import("./block-list-table.js").BlockListStore;
 * }} FallbackChain
 */

/**
 * createFallbackChain returns a store made of others.
 *
 * - primary: the store that should decide (normally createDurableStore(...)). Required.
 * - kv: a store to decide when the primary cannot (normally createKvStore(...)). Optional.
 * - memory: the isolate's store, tried after kv. Optional: leave it out to go straight to failMode.
 *   A fallback store whose binding env lacks (store.isBound(env) false) is passed over, and the
 *   reason says so.
 * - failMode: "open" admits and "closed" denies when no store answers. Default "open".
 * - timeoutMs: how long each store may take before the next one is asked, one fixed number for all.
 *   Default: each store's own timeoutFor(checks) (learnt from its round trips), else 50 ms.
 * - lateWindowMs: how long a primary call that timed out may still answer before it counts as
 *   unanswered (a breaker failure). Default 8 timeouts, within 1 s to 30 s.
 * - failClosedRetryAfterMs: the retryAfterMs of a fail-closed denial. Default 1000.
 * - breaker: after `failures` failures in a row of a store, skip that store for `cooldownMs`, then let
 *   one request probe it (breaker.js). Every store of the chain has its own breaker with these settings.
 *   Default { failures: 5, cooldownMs: 10000 }; false turns them all off.
 * - preFilter: deny, from this isolate, keys the primary denied until their retry time. Default true.
 * - preFilterMaxKeys: the most denied keys remembered. Default 10000.
 * - log, logIntervalMs: fallbacks are logged at most once per interval. Default console.warn, 60 s.
 *
 * decide needs options.nowMs (the isolate's clock; the primary may keep its own).
 * `counters` is live: decisions per store, fallbacks, pre-filtered denials, failures per store.
 * @param {FallbackChainOptions} options
 * @returns {FallbackChain}
 */
export function createFallbackChain(options = /** @type {any} */ ({})) {
  const state = createChainState(checkChainOptions(options));
  const { settings, counters, denials, leased, primaryName } = state;

  /**
   * @param {readonly StoreCheck[]} checks
   * @param {TimedStoreOptions} decideOptions
   * @returns {Outcome | Promise<Outcome>}
   */
  function decide(checks, decideOptions = /** @type {TimedStoreOptions} */ ({})) {
    const { nowMs } = decideOptions;
    if (typeof nowMs !== "number" || !Number.isFinite(nowMs)) {
      throw new TypeError("the fallback chain needs options.nowMs (ms since the epoch)");
    }
    if (denials !== null) {
      const denied = denials.lookup(checks, nowMs);
      if (denied !== null) {
        counters.preFiltered++;
        return denied;
      }
    }
    // A primary that holds part of the count here (a lease: leases.js) decides from it first, with no
    // I/O, before the breaker: what it holds stays good while the primary is unreachable.
    if (leased !== null) {
      const local = leased.decideLocally(checks, decideOptions);
      if (local !== null) {
        counters.decided[primaryName]++;
        return local;
      }
    }
    return decideInOrder(state, checks, decideOptions, nowMs);
  }

  /**
   * The tables every store of the chain may keep in the isolate (the memory budget counts them).
   * @param {NormalizedRule} rule
   * @returns {IsolateTable[]}
   */
  function isolateTables(rule) {
    const tables = [];
    for (const store of [settings.primary, settings.kv, settings.memory]) {
      if (store !== null && typeof store.isolateTables === "function") tables.push(...store.isolateTables(rule));
    }
    return tables;
  }

  /**
   * reset forgets the keys of `checks` in every store of the chain that may count them (a fallback
   * whose binding env lacks is passed over), and in the pre-filter's memory of denials.
   * @param {readonly StoreCheck[]} checks
   * @param {TimedStoreOptions} resetOptions
   * @returns {Promise<void>}
   */
  async function reset(checks, resetOptions) {
    denials?.forget(checks);
    const stores = /** @type {Store[]} */ ([settings.primary, settings.kv, settings.memory].filter((store) => store !== null)).filter((store) => store.isBound?.(resetOptions.env) !== false);
    for (const store of stores) {
      if (typeof store.reset !== "function") throw new TypeError(`sluice: the ${store.name} store of this chain has no reset()`);
    }
    await Promise.all(stores.map((store) => /** @type {Required<Store>} */ (store).reset(checks, resetOptions)));
  }

  // The deployment's list of auto-blocks is the primary store's (a fallback keeps counts, not that list).
  return { name: "chain", counters, decide, reset, isolateTables, blockList: settings.primary.blockList };
}
