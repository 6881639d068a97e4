// Durable Objects' location hints: where a regional object (regional.js) is asked to be placed
// (developers.cloudflare.com/durable-objects/reference/data-location/). A hint is a preference, not a
// guarantee, and it counts only when the object is first created.
import { SluiceConfigError, describe } from "../engine/errors.js";

/** The hints Durable Objects take in `namespace.get(id, { locationHint })`. */
export const LOCATION_HINTS = Object.freeze(["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"]);

/**
 * checkLocationHint throws a SluiceConfigError naming `field` unless `hint` is one of LOCATION_HINTS
 * or a function (asked at each call, returning one of them or undefined).
 * @param {unknown} hint @param {string} field
 */
export function checkLocationHint(hint, field) {
  if (typeof hint === "function") return;
  if (typeof hint !== "string" || !LOCATION_HINTS.includes(hint)) {
    throw new SluiceConfigError(field, `must be one of ${LOCATION_HINTS.join(", ")}, or a function returning one (or undefined); got ${describe(hint)}`);
  }
}

const functionIds = new WeakMap();
let nextFunctionId = 1;

/**
 * hintId names a hint for sharing stores and for storeStats(): the hint itself, or "function#N" for
 * a function (the same function, the same N).
 * @param {string | (() => string | undefined)} hint
 */
export function hintId(hint) {
  if (typeof hint !== "function") return hint;
  let id = functionIds.get(hint);
  if (id === undefined) functionIds.set(hint, (id = `function#${nextFunctionId++}`));
  return id;
}
