// sluice/testing: the test kit users import to try their limits where they will run, on a planet
// (regions at a distance from the store's home, jitter, lost calls, partitions). Only re-exports.
export { GeographyError, createRegion, restartObject, seededRandom } from "./geography.js";
