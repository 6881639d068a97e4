// One attempt: a call to one store of the chain, bounded by its timeout, its failures counted.
import { DeadlineError, withDeadline } from "../deadline.js";
import { DEFAULT_TIMEOUT_MS } from "./settings.js";

/** @import { Outcome, Store, StoreCheck, TimedStoreOptions } from "../store.js" */
/** @import { ChainState } from "./state.js" */

/**
 * askStore calls a store, bounded by its timeout (none when the store bounds its own calls:
 * ownDeadline, counted from when each call leaves the isolate); counts its timeouts and errors, and
 * rethrows them.
 * @param {ChainState} state
 * @param {Store} store
 * @param {string} name
 * @param {readonly StoreCheck[]} checks
 * @param {TimedStoreOptions} decideOptions
 * @returns {Promise<Outcome>}
 */
export async function askStore(state, store, name, checks, decideOptions) {
  const { timeoutMs } = state.settings;
  const limitMs = timeoutMs ?? (typeof store.timeoutFor === "function" ? store.timeoutFor(checks) : DEFAULT_TIMEOUT_MS);
  try {
    return await withDeadline(store.decide(checks, decideOptions), store.ownDeadline === true ? Infinity : limitMs, name);
  } catch (error) {
    if (error instanceof DeadlineError) {
      state.counters.timeouts[name]++;
      store.timedOut?.(checks, limitMs);
    } else {
      state.counters.errors[name]++;
    }
    throw error;
  }
}

/**
 * describeFailure says why a store did not decide, for a fallback's reason.
 * @param {string} name
 * @param {unknown} error
 * @returns {string}
 */
export function describeFailure(name, error) {
  if (error instanceof DeadlineError) return `${name} timed out after ${error.timeoutMs} ms`;
  return `${name} failed: ${/** @type {{ message?: unknown } | null | undefined} */ (error)?.message ?? String(error)}`;
}
