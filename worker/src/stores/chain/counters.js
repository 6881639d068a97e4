// The fallback chain's live counters (FallbackChainCounters): what decided, what failed, what the
// breakers did and what became of late answers. Every store name starts at 0, so a dashboard sees
// every store of the chain before its first event.

/** @import { FallbackChainCounters } from "../chain.js" */

/**
 * createChainCounters returns the counters of a chain whose stores are `storeNames`, the primary first.
 * @param {string[]} storeNames
 * @returns {FallbackChainCounters}
 */
export function createChainCounters(storeNames) {
  return {
    /** Decisions per store that took them; "failMode" when none could. */
    decided: perName([...storeNames, "failMode"]),
    /** Decisions the primary did not take (it failed), pre-filtered ones aside. */
    fallbacks: 0,
    /** Denials answered from this isolate's memory of the primary's earlier denials. */
    preFiltered: 0,
    /** Per store: calls that threw or rejected. */
    errors: perName(storeNames),
    /** Per store: calls that did not answer within timeoutMs. */
    timeouts: perName(storeNames),
    /** Times a store's circuit breaker opened (all stores; per store in circuitOpenedBy). */
    circuitOpened: 0,
    /** Times a store was skipped because its breaker was open (a skipped primary counts among fallbacks too). */
    circuitSkipped: 0,
    circuitOpenedBy: perName(storeNames),
    circuitSkippedBy: perName(storeNames),
    /** Decisions taken by a fallback weaker than the primary, per store that took them. */
    weakened: perName([...storeNames.slice(1), "failMode"]),
    /** What became of primary calls the chain stopped waiting for. */
    late: { answered: 0, agreed: 0, undone: 0, undoMissed: 0, admittedUncounted: 0, failed: 0, unanswered: 0 },
  };
}

/**
 * @param {string[]} names
 * @returns {Record<string, number>}
 */
function perName(names) {
  return Object.fromEntries(names.map((name) => [name, 0]));
}

/**
 * countSkip counts a call the store's open breaker kept from being made.
 * @param {FallbackChainCounters} counters
 * @param {string} name
 */
export function countSkip(counters, name) {
  counters.circuitSkipped++;
  counters.circuitSkippedBy[name]++;
}

/**
 * countOpened counts a store's breaker opening.
 * @param {FallbackChainCounters} counters
 * @param {string} name
 */
export function countOpened(counters, name) {
  counters.circuitOpened++;
  counters.circuitOpenedBy[name]++;
}
