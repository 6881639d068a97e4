// sluice/testing: the test kit users import. Only re-exports.
//  - testClock, resetLimiters: prove a 429 and its recovery without sleeping, and start each test fresh;
//  - the geography seam: try limits where they will run, on a planet (regions at a distance from the
//    store's home, jitter, lost calls, partitions).
export { TEST_EPOCH_MS, testClock } from "./clock.js";
export { resetLimiters } from "./reset.js";
export { GeographyError, createRegion, restartObject, seededRandom } from "./geography.js";

/** @typedef {import("./clock.js").TestClock} TestClock */
