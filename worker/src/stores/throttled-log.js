// Logging a recurring failure at most once per interval, never once per request.

/**
 * createThrottledLog returns `report(nowMs, message)`: the first report logs at once; later ones are
 * counted and folded into the next line, written no sooner than `intervalMs` after the previous.
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

/** checkLogOptions validates the `log` function and `logIntervalMs` of a store. */
export function checkLogOptions(log, logIntervalMs) {
  if (typeof log !== "function") throw new TypeError("log must be a function");
  if (typeof logIntervalMs !== "number" || !(logIntervalMs >= 0)) {
    throw new RangeError(`logIntervalMs must be a number >= 0; got ${String(logIntervalMs)}`);
  }
}
