// Marking the decisions the primary did not take. A fallback store's decision, and failMode "open"'s
// admission, could admit what the primary would not: their `fallback.weakened` is true, and they are
// counted per deciding store (counters.weakened), so they can be alerted on.

/** @import { Outcome, StoreCheck } from "../store.js" */
/** @import { ChainState } from "./state.js" */

/**
 * fallbackOutcome marks a fallback store's decision as weakened, and counts it.
 * @param {ChainState} state
 * @param {Outcome} outcome
 * @param {string} name The store that decided.
 * @param {string} reason Why the stores before it did not.
 * @returns {Outcome}
 */
export function fallbackOutcome(state, outcome, name, reason) {
  state.counters.weakened[name]++;
  return { ...outcome, fallback: { from: fallbackFrom(state), reason, weakened: true } };
}

/**
 * failModeOutcome is the decision when no store could decide, counted. No store consulted any check,
 * so none has a decision of its own (null). Open admits, and what is left is unknown (remaining 0
 * stands for "nothing promised"); closed denies until the retry.
 * @param {ChainState} state
 * @param {readonly StoreCheck[]} checks
 * @param {string} reason
 * @returns {Outcome}
 */
export function failModeOutcome(state, checks, reason) {
  const { failMode, failClosedRetryAfterMs } = state.settings;
  state.counters.decided.failMode++;
  if (failMode === "open") state.counters.weakened.failMode++;
  const allowed = failMode === "open";
  const retryAfterMs = allowed ? 0 : failClosedRetryAfterMs;
  return {
    allowed,
    limit: checks[0].rule.limit,
    remaining: 0,
    resetMs: retryAfterMs,
    retryAfterMs,
    decidingCheck: 0,
    checks: checks.map(() => null),
    store: "none",
    fallback: { from: fallbackFrom(state), reason: `${reason}; failing ${failMode}`, weakened: allowed },
  };
}

// Outcome.fallback.from names the built-in primaries; a store of the app's own passes its own name.
/**
 * @param {ChainState} state
 * @returns {"durable" | "kv" | "redis"}
 */
function fallbackFrom(state) {
  return /** @type {"durable" | "kv" | "redis"} */ (state.primaryName);
}
