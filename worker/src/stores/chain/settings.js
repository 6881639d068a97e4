// The fallback chain's options, checked once when the chain is built (a bad one throws a
// SluiceConfigError naming it), with their defaults applied.
import { SluiceConfigError, describe } from "../../engine/errors.js";
import { checkBreakerOptions } from "../breaker.js";
import { checkTimeout } from "../deadline.js";
import { DEFAULT_LOG_INTERVAL_MS, checkLogOptions } from "../throttled-log.js";

/** @import { BreakerOptions } from "../breaker.js" */
/** @import { FallbackChainOptions } from "../chain.js" */
/** @import { Store } from "../store.js" */

const FAIL_MODES = ["open", "closed"];
/** What happens when no store can answer, by default: admit. */
export const DEFAULT_FAIL_MODE = /** @type {const} */ ("open");
/** How long a store that does not measure its round trips (timeoutFor) may take, by default. */
export const DEFAULT_TIMEOUT_MS = 50;
/** How long after a timeout the chain still waits for the late answer, in timeouts, and its bounds (ms). */
export const LATE_WINDOW = Object.freeze({ timeouts: 8, minMs: 1000, maxMs: 30_000 });

/**
 * The chain's options once checked: every default applied, the breaker's settings normalized (null: off).
 * @typedef {object} ChainSettings
 * @property {Store} primary
 * @property {Store | null} kv
 * @property {Store | null} memory
 * @property {"open" | "closed"} failMode
 * @property {number | undefined} timeoutMs Undefined: each store's own timeoutFor, else DEFAULT_TIMEOUT_MS.
 * @property {number | undefined} lateWindowMs Undefined: LATE_WINDOW's timeouts, within its bounds.
 * @property {Readonly<Required<BreakerOptions>> | null} breaker
 * @property {number} failClosedRetryAfterMs
 * @property {boolean} preFilter
 * @property {number} preFilterMaxKeys
 * @property {(line: string) => void} log
 * @property {number} logIntervalMs
 */

/**
 * checkChainOptions validates the options of createFallbackChain and applies their defaults.
 * @param {FallbackChainOptions} options
 * @returns {ChainSettings}
 */
export function checkChainOptions(options) {
  const {
    primary,
    kv = null,
    memory = null,
    failMode = DEFAULT_FAIL_MODE,
    timeoutMs,
    breaker: breakerOptions,
    failClosedRetryAfterMs = 1000,
    lateWindowMs,
    preFilter = true,
    preFilterMaxKeys = 10_000,
    log = console.warn,
    logIntervalMs = DEFAULT_LOG_INTERVAL_MS,
  } = options;
  checkStore(primary, "primary", false);
  checkStore(kv, "kv", true);
  checkStore(memory, "memory", true);
  if (!FAIL_MODES.includes(failMode)) throw new SluiceConfigError("failMode", `must be "open" or "closed"; got ${describe(failMode)}`);
  if (timeoutMs !== undefined) checkTimeout(timeoutMs, "timeoutMs");
  if (lateWindowMs !== undefined && !(typeof lateWindowMs === "number" && lateWindowMs > 0 && lateWindowMs <= LATE_WINDOW.maxMs)) {
    throw new SluiceConfigError("lateWindowMs", `must be a number of milliseconds > 0 and <= ${LATE_WINDOW.maxMs}; got ${describe(lateWindowMs)}`);
  }
  const breaker = checkBreakerOptions(breakerOptions);
  if (typeof failClosedRetryAfterMs !== "number" || !(failClosedRetryAfterMs >= 0) || failClosedRetryAfterMs === Infinity) {
    throw new SluiceConfigError("failClosedRetryAfterMs", `must be a finite number of milliseconds >= 0; got ${describe(failClosedRetryAfterMs)}`);
  }
  if (typeof preFilter !== "boolean") throw new SluiceConfigError("preFilter", `must be true or false; got ${describe(preFilter)}`);
  if (!Number.isInteger(preFilterMaxKeys) || preFilterMaxKeys < 1) {
    throw new SluiceConfigError("preFilterMaxKeys", `must be a whole number >= 1; got ${describe(preFilterMaxKeys)}`);
  }
  checkLogOptions(log, logIntervalMs);
  return { primary, kv, memory, failMode, timeoutMs, lateWindowMs, breaker, failClosedRetryAfterMs, preFilter, preFilterMaxKeys, log, logIntervalMs };
}

/**
 * @param {unknown} store
 * @param {string} field
 * @param {boolean} optional
 */
function checkStore(store, field, optional) {
  if (optional && store === null) return;
  if (store === null || typeof store !== "object" || typeof (/** @type {{ decide?: unknown }} */ (store).decide) !== "function") {
    throw new SluiceConfigError(field, `must be a store (an object with decide(checks, options))${optional ? " or null" : ""}; got ${describe(store)}`);
  }
}
