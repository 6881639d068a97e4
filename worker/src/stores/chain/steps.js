// The chain's order of asking: the primary, behind its breaker; when it fails or is slow, each
// fallback in turn (kv, then memory) behind its own breaker; when none can decide, failMode.
import { SluiceConfigError } from "../../engine/errors.js";
import { DeadlineError } from "../deadline.js";
import { askStore, describeFailure } from "./ask.js";
import { countOpened, countSkip } from "./counters.js";
import { settleLate } from "./late-answers.js";
import { failModeOutcome, fallbackOutcome } from "./weakened.js";

/** @import { CircuitBreaker } from "../breaker.js" */
/** @import { Outcome, StoreCheck, TimedStoreOptions } from "../store.js" */
/** @import { SlowCall } from "./late-answers.js" */
/** @import { ChainState } from "./state.js" */

/**
 * decideInOrder asks the primary (its remote half, after a lease's local miss), then the fallbacks.
 * A slow primary is waited for in the background (late-answers.js).
 * @param {ChainState} state
 * @param {readonly StoreCheck[]} checks
 * @param {TimedStoreOptions} decideOptions
 * @param {number} nowMs
 * @returns {Promise<Outcome>}
 */
export async function decideInOrder(state, checks, decideOptions, nowMs) {
  const { breaker, primaryName, counters, denials } = state;
  /** @type {string[]} */
  const failures = [];
  /** @type {SlowCall | null} */
  let slow = null;
  const gate = breaker === null ? "closed" : breaker.admit(nowMs);
  if (gate === "open") {
    countSkip(counters, primaryName);
    failures.push(`${primaryName} skipped: ${/** @type {CircuitBreaker} */ (breaker).reason}`);
  } else {
    try {
      const outcome = await askStore(state, state.primaryRemote, primaryName, checks, decideOptions);
      breaker?.succeeded();
      counters.decided[primaryName]++;
      if (denials !== null) denials.remember(checks, outcome, nowMs);
      return outcome;
    } catch (error) {
      // A misconfigured store (e.g. a secret missing from env) is an error, not an outage to hide.
      if (error instanceof SluiceConfigError) throw error;
      if (error instanceof DeadlineError && error.late !== undefined) {
        // Slow is not failed: the breaker hears of this call when it settles (settleLate).
        slow = { late: error.late, timeoutMs: error.timeoutMs, probe: gate === "probe" };
      } else if (breaker !== null && breaker.failed(nowMs, gate === "probe")) {
        countOpened(counters, primaryName);
      }
      failures.push(describeFailure(primaryName, error));
    }
  }
  const answered = await decideWithout(state, checks, decideOptions, nowMs, failures);
  if (slow !== null) settleLate(state, slow, answered, decideOptions, nowMs);
  return answered;
}

/**
 * decideWithout: the primary did not decide; the fallbacks in order, then failMode.
 * @param {ChainState} state
 * @param {readonly StoreCheck[]} checks
 * @param {TimedStoreOptions} decideOptions
 * @param {number} nowMs
 * @param {string[]} failures Why the stores asked so far did not decide; grows with each fallback that fails.
 * @returns {Promise<Outcome>}
 */
async function decideWithout(state, checks, decideOptions, nowMs, failures) {
  const { counters, breakers, report } = state;
  counters.fallbacks++;
  for (const [store, name] of state.fallbacks) {
    if (store.isBound?.(decideOptions.env) === false) {
      failures.push(`${name} not bound`);
      continue;
    }
    const storeBreaker = breakers.get(name) ?? null;
    const storeGate = storeBreaker === null ? "closed" : storeBreaker.admit(nowMs);
    if (storeGate === "open") {
      countSkip(counters, name);
      failures.push(`${name} skipped: ${/** @type {CircuitBreaker} */ (storeBreaker).reason}`);
      continue;
    }
    try {
      const outcome = await askStore(state, store, name, checks, decideOptions);
      storeBreaker?.succeeded();
      counters.decided[name]++;
      const reason = failures.join("; ");
      report(nowMs, `${reason}; decided by ${name}`);
      return fallbackOutcome(state, outcome, name, reason);
    } catch (error) {
      if (storeBreaker !== null && storeBreaker.failed(nowMs, storeGate === "probe")) countOpened(counters, name);
      failures.push(describeFailure(name, error));
    }
  }
  const { failMode } = state.settings;
  const reason = failures.length > 0 ? failures.join("; ") : `${state.primaryName} failed`;
  const outcome = failModeOutcome(state, checks, reason);
  report(nowMs, `${reason}; no store could decide, failing ${failMode}`);
  return outcome;
}
