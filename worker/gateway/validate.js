// Field checks shared by the configuration validators. Every failure is a ConfigError whose message
// starts with the field's path (`routes[2].rules[0].limit`), so a bad deployment names what to fix.

import { SluiceConfigError } from "../src/engine/errors.js";

/**
 * A value read from the configuration's JSON (gateway.config.json or SLUICE_CONFIG): untrusted, so
 * every validator checks its shape (with the expect* functions below) before it uses a field. It is
 * `any` on purpose, and only here, at the boundary: the checks narrow it by hand.
 * @typedef {any} RawJson
 */

/**
 * A configuration that cannot be served: `path` is the offending field, `source` (when known) where the
 * configuration came from ("gateway.config.json", "SLUICE_CONFIG").
 */
export class ConfigError extends Error {
  /** @param {string} path @param {string} problem @param {string} [source] */
  constructor(path, problem, source) {
    super(`${source === undefined ? "" : `invalid gateway configuration (${source}): `}${path}: ${problem}`);
    this.name = "ConfigError";
    this.path = path;
    this.problem = problem;
    this.source = source;
  }
}

/**
 * Runs `validate`, a check of the host's (options.js, the store registry), and reports its
 * SluiceConfigError as a ConfigError at `path` plus the host's field: `limit` at `routes[2].rules[0]`
 * is `routes[2].rules[0].limit`.
 * @template T
 * @param {string} path
 * @param {() => T} validate
 * @returns {T}
 */
export function hostValidated(path, validate) {
  try {
    return validate();
  } catch (error) {
    if (error instanceof SluiceConfigError) throw new ConfigError(fieldPath(path, error.field), error.problem);
    throw error;
  }
}

/** @param {string} parent @param {string | number} name @returns {string} */
export function fieldPath(parent, name) {
  if (typeof name === "number") return `${parent}[${name}]`;
  return parent === "" ? name : `${parent}.${name}`;
}

// Describes a value in an error message without echoing a long or multi-line one.
/** @param {unknown} value @returns {string} */
export function show(value) {
  if (value === undefined) return "nothing";
  let text;
  try {
    text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  if (Number.isNaN(value)) text = "NaN";
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** @param {unknown} value @returns {value is RawJson} */
export function isPlainObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** @param {unknown} value @param {string} path @returns {RawJson} */
export function expectObject(value, path) {
  if (!isPlainObject(value)) throw new ConfigError(path, `must be an object; got ${show(value)}`);
  return value;
}

// Unknown fields are errors: a misspelt `windowsec` must not silently leave a rule at its default.
/** @param {object} object @param {string} path @param {readonly string[]} allowed */
export function expectKnownFields(object, path, allowed) {
  for (const name of Object.keys(object)) {
    if (!allowed.includes(name)) {
      throw new ConfigError(fieldPath(path, name), `unknown field (expected one of ${allowed.join(", ")})`);
    }
  }
}

/**
 * @param {unknown} value
 * @param {string} path
 * @param {{ pattern?: RegExp; description?: string }} [options]
 * @returns {string}
 */
export function expectString(value, path, { pattern, description } = {}) {
  if (typeof value !== "string" || value === "") {
    throw new ConfigError(path, `must be a non-empty string; got ${show(value)}`);
  }
  if (pattern !== undefined && !pattern.test(value)) {
    throw new ConfigError(path, `must be ${description}; got ${show(value)}`);
  }
  return value;
}

/** @template T @param {unknown} value @param {string} path @param {readonly T[]} choices @returns {T} */
export function expectOneOf(value, path, choices) {
  if (!choices.includes(/** @type {T} */ (value))) {
    throw new ConfigError(path, `must be one of ${choices.map((c) => JSON.stringify(c)).join(", ")}; got ${show(value)}`);
  }
  return /** @type {T} */ (value);
}

/** @param {unknown} value @param {string} path @param {number} min @param {number} max @returns {number} */
export function expectInteger(value, path, min, max) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(path, `must be a whole number from ${min} to ${max}; got ${show(value)}`);
  }
  return value;
}

/** @param {unknown} value @param {string} path @param {number} min @param {number} max @returns {number} */
export function expectNumber(value, path, min, max) {
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    throw new ConfigError(path, `must be a number from ${min} to ${max}; got ${show(value)}`);
  }
  return value;
}

/** @param {unknown} value @param {string} path @param {{ min?: number, max?: number }} bounds @returns {RawJson[]} */
export function expectArray(value, path, { min = 0, max = Infinity } = {}) {
  if (!Array.isArray(value)) throw new ConfigError(path, `must be an array; got ${show(value)}`);
  if (value.length < min) throw new ConfigError(path, `must list at least ${min} ${min === 1 ? "entry" : "entries"}`);
  if (value.length > max) throw new ConfigError(path, `must list at most ${max} entries; got ${value.length}`);
  return value;
}

// Binding names as wrangler accepts them for [vars], secrets and service bindings.
export const BINDING_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const BINDING_DESCRIPTION = "a binding name (letters, digits and _, not starting with a digit)";

// An HTTP field name (RFC 9110 token), lower-cased by the validators that accept one.
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/;
export const HEADER_DESCRIPTION = "an HTTP header name";
