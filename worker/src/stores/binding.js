// Bindings given either as the binding object itself or as its name in the Worker's `env`.
import { SluiceConfigError, describe } from "../engine/errors.js";

/**
 * checkBinding validates a binding option at construction: an object having `methods`, or the
 * non-empty name of one in `env` (resolved per request, since `env` is only known then).
 * @param {unknown} binding
 * @param {string} field
 * @param {readonly string[]} methods
 * @returns {void}
 */
export function checkBinding(binding, field, methods) {
  if (typeof binding === "string") {
    if (binding === "") throw new SluiceConfigError(field, "must name a binding; got an empty string");
    return;
  }
  const ok = binding !== null && typeof binding === "object" && methods.every((m) => typeof (/** @type {any} */ (binding))[m] === "function");
  if (!ok) {
    throw new SluiceConfigError(field, `must be a binding (with ${methods.join(", ")}) or its name in env; got ${describe(binding)}`);
  }
}

/**
 * isBound reports whether `binding` is an object, or names one that `env` has.
 * @param {unknown} binding
 * @param {any} env
 * @returns {boolean}
 */
export function isBound(binding, env) {
  return typeof binding !== "string" || (env?.[binding] !== undefined && env?.[binding] !== null);
}

/**
 * resolveBinding returns the binding object, looking a name up in `env`.
 * @template T
 * @param {T | string} binding
 * @param {any} env
 * @param {string} field
 * @returns {T}
 */
export function resolveBinding(binding, env, field) {
  if (typeof binding !== "string") return binding;
  const resolved = env?.[binding];
  if (resolved === undefined || resolved === null) {
    throw new Error(`${field}: env has no binding named "${binding}"`);
  }
  return resolved;
}
