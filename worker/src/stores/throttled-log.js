// Logging a recurring failure at most once per interval, never once per request.
import { SluiceConfigError, describe } from "../engine/errors.js";

/** How often a recurring failure is logged at most, by default. */
export const DEFAULT_LOG_INTERVAL_MS = 60_000;

/**
 * createThrottledLog returns `report(nowMs, message)`: the first report logs at once; later ones are
 * counted and folded into the next line, written no sooner than `intervalMs` after the previous.
 * @param {(line: string) => void} log
 * @param {number} intervalMs
 * @returns {(nowMs: number, message: string) => void}
 */
export function createThrottledLog(log, intervalMs) {
  let lastLoggedMs = -Infinity;
  let unlogged = 0;
  return function report(nowMs, message) {
    unlogged++;
    if (nowMs - lastLoggedMs < intervalMs) return;
    const times = unlogged === 1 ? "" : ` (${unlogged} times since the last report)`;
    lastLoggedMs = nowMs;
    unlogged = 0;
    log(`sluice: ${message}${times}`);
  };
}

/**
 * checkLogOptions validates the `log` function and `logIntervalMs` of a store.
 * @param {unknown} log
 * @param {unknown} logIntervalMs
 * @returns {void}
 */
export function checkLogOptions(log, logIntervalMs) {
  if (typeof log !== "function") throw new SluiceConfigError("log", `must be a function; got ${describe(log)}`);
  if (typeof logIntervalMs !== "number" || !(logIntervalMs >= 0)) {
    throw new SluiceConfigError("logIntervalMs", `must be a number of milliseconds >= 0; got ${describe(logIntervalMs)}`);
  }
}
