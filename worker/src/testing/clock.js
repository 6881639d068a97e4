// A clock a test advances: pass it as a limiter's `clock` and move time on instead of sleeping.
//
//   const clock = testClock();
//   const app = createApp({ clock });           // rateLimit({ ..., clock })
//   ... send limit + 1 requests: a 429 ...
//   clock.advance(60_000);                      // a minute later, at once
//
// The clock drives the isolate's memory store and the fallback chain; a Durable Object or Redis decides
// on its own clock (docs/testing.md).
import { SluiceConfigError, describe } from "../engine/errors.js";

/** Where a test clock starts unless told: 2030-01-01T00:00:00Z, a whole minute, hour and day. */
export const TEST_EPOCH_MS = Date.UTC(2030, 0, 1);

/**
 * A clock for tests: call it for the time (ms since the epoch); advance or set it.
 * @typedef {(() => number) & {
 *   advance(ms: number): number;
 *   set(ms: number): number;
 *   readonly now: number;
 * }} TestClock
 */

/** @param {unknown} ms @param {string} field @returns {number} */
function wholeMs(ms, field) {
  if (typeof ms !== "number" || !Number.isSafeInteger(ms) || ms < 0) {
    throw new SluiceConfigError(field, `must be a whole, non-negative number of milliseconds; got ${describe(ms)}`);
  }
  return ms;
}

/**
 * testClock returns a clock that stands still until the test moves it: `advance(ms)` moves it on
 * (never back) and `set(ms)` puts it anywhere, time running backwards included (the core treats that
 * as input). Both return the new time.
 * @param {number} [startMs] Default TEST_EPOCH_MS.
 * @returns {TestClock}
 */
export function testClock(startMs = TEST_EPOCH_MS) {
  let now = wholeMs(startMs, "startMs");
  const clock = /** @type {TestClock} */ (() => now);
  Object.defineProperties(clock, {
    now: { get: () => now, enumerable: true },
    advance: { value: (/** @type {number} */ ms) => (now += wholeMs(ms, "ms")) },
    set: { value: (/** @type {number} */ ms) => (now = wholeMs(ms, "ms")) },
  });
  return clock;
}
