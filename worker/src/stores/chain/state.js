// What a fallback chain keeps between requests: its settings, its stores in the order they are asked,
// one circuit breaker per store, the pre-filter's memory of denials, its counters and its log. The
// steps (steps.js, late-answers.js) are functions of this one object.
import { CircuitBreaker } from "../breaker.js";
import { DenialCache } from "../denial-cache.js";
import { createThrottledLog } from "../throttled-log.js";
import { createChainCounters } from "./counters.js";

/** @import { FallbackChainCounters } from "../chain.js" */
/** @import { Store } from "../store.js" */
/** @import { ChainSettings } from "./settings.js" */

/** @typedef {Required<Pick<Store, "decideLocally" | "decideRemotely">>} LeasedStore */

/**
 * @typedef {object} ChainState
 * @property {ChainSettings} settings
 * @property {string} primaryName
 * @property {LeasedStore | null} leased The primary, when it holds part of the count in the isolate (a lease).
 * @property {Store} primaryRemote The primary as the chain calls it after a local miss: its remote half only.
 * @property {Array<[Store, string]>} fallbacks kv then memory, those given, with their names.
 * @property {FallbackChainCounters} counters
 * @property {Map<string, CircuitBreaker | null>} breakers Per store name; null when breakers are off.
 * @property {CircuitBreaker | null} breaker The primary's.
 * @property {DenialCache | null} denials The pre-filter's memory; null when preFilter is false.
 * @property {(nowMs: number, message: string) => void} report The throttled log of fallbacks.
 */

/**
 * createChainState builds the state of a chain from its checked settings.
 * @param {ChainSettings} settings
 * @returns {ChainState}
 */
export function createChainState(settings) {
  const { primary, kv, memory } = settings;
  const primaryName = primary.name ?? "durable";
  // After a local miss (chain.js's decide), the primary's remote half only: asking `decide` would count
  // the request twice in the lease's rate.
  const leased =
    typeof primary.decideLocally === "function" && typeof primary.decideRemotely === "function"
      ? /** @type {LeasedStore} */ (primary)
      : null;
  /** @type {Store} */
  const primaryRemote =
    leased === null
      ? primary
      : {
          name: primaryName,
          ownDeadline: primary.ownDeadline,
          decide: (checks, options) => leased.decideRemotely(checks, options),
          timeoutFor: primary.timeoutFor,
          timedOut: primary.timedOut,
          takeBack: primary.takeBack,
        };
  /** @type {Array<[Store, string]>} */
  const fallbacks = [];
  if (kv !== null) fallbacks.push([kv, kv.name ?? "kv"]);
  if (memory !== null) fallbacks.push([memory, memory.name ?? "memory"]);
  const storeNames = [primaryName, ...fallbacks.map(([, name]) => name)];
  const breakers = new Map(storeNames.map((name) => [name, settings.breaker === null ? null : new CircuitBreaker(settings.breaker)]));
  return {
    settings,
    primaryName,
    leased,
    primaryRemote,
    fallbacks,
    counters: createChainCounters(storeNames),
    breakers,
    breaker: breakers.get(primaryName) ?? null,
    denials: settings.preFilter ? new DenialCache(settings.preFilterMaxKeys) : null,
    report: createThrottledLog(settings.log, settings.logIntervalMs),
  };
}
