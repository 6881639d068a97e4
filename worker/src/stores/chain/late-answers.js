// Late-answer reconciliation. A primary call that timed out is not failed yet: the chain decided
// without it and waits for it in the background (ctx.waitUntil). If it answers within the late window,
// that is a success, and its decision is reconciled with the one the chain gave (the answered decision
// wins): a charge the object made for a request the chain denied is undone; an admission the object
// denied is counted (late.admittedUncounted). A call that fails, or never answers in the window, counts
// as a breaker failure.
import { countOpened } from "./counters.js";
import { LATE_WINDOW } from "./settings.js";

/** @import { Outcome, TimedStoreOptions } from "../store.js" */
/** @import { ChainState } from "./state.js" */

/**
 * A primary call the chain stopped waiting for.
 * @typedef {object} SlowCall
 * @property {Promise<unknown>} late The call, still running.
 * @property {number} timeoutMs How long the chain waited for it.
 * @property {boolean} probe The call was its breaker's probe.
 */

/**
 * settleLate waits, in the background, for a primary call the chain stopped waiting for, and
 * reconciles its decision with the one the chain gave (`answered`): the answered decision wins.
 * @param {ChainState} state
 * @param {SlowCall} slow
 * @param {Outcome} answered
 * @param {TimedStoreOptions} decideOptions
 * @param {number} nowMs
 */
export function settleLate(state, { late, timeoutMs: waitedMs, probe }, answered, decideOptions, nowMs) {
  const { counters, breaker, primaryName } = state;
  const windowMs = lateWindowFor(state, waitedMs);
  /** @type {number | undefined} */
  let timer;
  /** @type {Promise<null>} */
  const givenUp = new Promise((resolve) => {
    timer = setTimeout(() => resolve(null), windowMs);
  });
  const settled = late.then(
    (outcome) => ({ outcome: /** @type {Outcome} */ (outcome) }),
    (error) => ({ error }),
  );
  const done = Promise.race([settled, givenUp]).then(async (result) => {
    clearTimeout(/** @type {number} */ (timer));
    if (result === null || "error" in result) {
      if (result === null) counters.late.unanswered++;
      else counters.late.failed++;
      // On the isolate's clock as the request saw it, plus the wait: the breaker only compares times.
      if (breaker !== null && breaker.failed(nowMs + windowMs, probe)) countOpened(counters, primaryName);
      return;
    }
    counters.late.answered++;
    breaker?.succeeded();
    await reconcile(state, result.outcome, answered, decideOptions);
  });
  decideOptions.ctx?.waitUntil(done.catch(() => {}));
}

/**
 * @param {ChainState} state
 * @param {number} waitedMs
 * @returns {number}
 */
function lateWindowFor(state, waitedMs) {
  return state.settings.lateWindowMs ?? Math.min(LATE_WINDOW.maxMs, Math.max(LATE_WINDOW.minMs, LATE_WINDOW.timeouts * waitedMs));
}

/**
 * reconcile makes the late answer `outcome` win over the decision the chain gave (`answered`).
 * @param {ChainState} state
 * @param {Outcome} outcome
 * @param {Outcome} answered
 * @param {TimedStoreOptions} decideOptions
 */
async function reconcile(state, outcome, answered, decideOptions) {
  const { counters, primaryRemote } = state;
  // A peek charged nothing: nothing to reconcile.
  if (decideOptions.peek === true || outcome.allowed === answered.allowed) {
    counters.late.agreed++;
  } else if (outcome.allowed) {
    // The object charged a request the chain denied: take the charge back.
    const back = typeof primaryRemote.takeBack === "function" ? await primaryRemote.takeBack(outcome) : { undone: 0, missed: outcome.checks.length };
    counters.late.undone += back.undone;
    counters.late.undoMissed += back.missed;
  } else {
    counters.late.admittedUncounted++;
  }
}
