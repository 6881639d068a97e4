// Per-key overrides from configuration (Unkey's overrides): a partner's API key gets 10x the limit, a
// noisy tenant a quarter. An override names an exact key, or a prefix of keys, as the rule's key
// function produces them (`ip:...`, `user:...`, an API key's value); the exact key wins, then the
// longest prefix. Each distinct override limit is a rule of its own in the core (its own counters),
// validated at construction like a configured limit.
import { SluiceConfigError, describe } from "../../engine/errors.js";

/**
 * One override.
 * @typedef {{ key: string, prefix?: undefined, limit: number } | { prefix: string, key?: undefined, limit: number }} Override
 */

// The tag of an overrideList() value: the engine finds its normalizer through it, so that only an app
// that imports overrideList bundles this module's validation.
const OVERRIDE_LIST = Symbol.for("sluice.overrideList");

/**
 * A rule's overrides from configuration, as overrideList() gives them to the `overrides` option.
 * @typedef {{ readonly [OVERRIDE_LIST]: (path: string) => NormalizedOverrides }} OverrideList
 */
/**
 * @typedef {{ overrideOf: (keyText: unknown) => number | undefined, limits: number[] }} NormalizedOverrides
 */

/**
 * overrideList is the value of a rule's `overrides` option for per-key limits from configuration:
 *
 *   rateLimit({ key: apiKey(), limit: 100, windowSec: 60, overrides: overrideList([{ key: "key:acme", limit: 1000 }]) })
 *
 * An override names an exact key or a prefix of keys, as the rule's key function produces them; the
 * exact key wins, then the longest prefix. The list is validated when the limiter is built, naming the
 * option (`overrides[0].limit`, `rules[1].overrides`).
 * @param {readonly Override[]} overrides
 * @returns {OverrideList}
 */
export function overrideList(overrides) {
  return Object.freeze({ [OVERRIDE_LIST]: (/** @type {string} */ path) => normalizeOverrides(overrides, path) });
}

/**
 * overrideListNormalizer is the normalizer of an overrideList() value, or undefined for anything else.
 * @param {unknown} value
 * @returns {((path: string) => NormalizedOverrides) | undefined}
 */
export function overrideListNormalizer(value) {
  if (value === null || typeof value !== "object") return undefined;
  const normalize = /** @type {any} */ (value)[OVERRIDE_LIST];
  return typeof normalize === "function" ? normalize : undefined;
}

/** The most overrides one rule takes (they are looked up per request: a map and a short list). */
export const MAX_OVERRIDES = 1000;
/** The most distinct override limits one rule takes: each is a table in the core. */
export const MAX_OVERRIDE_LIMITS = 7;

/**
 * normalizeOverrides validates a rule's `overrides` and returns `overrideOf(keyText)`: the limit an
 * override gives that key, or undefined; and the distinct limits, to be made rules up front.
 * @param {unknown} overrides
 * @param {string} path e.g. "overrides" or "rules[1].overrides"
 * @returns {NormalizedOverrides}
 */
export function normalizeOverrides(overrides, path) {
  if (!Array.isArray(overrides) || overrides.length < 1 || overrides.length > MAX_OVERRIDES) {
    throw new SluiceConfigError(path, `must be a list of 1 to ${MAX_OVERRIDES} overrides { key | prefix, limit }; got ${describe(overrides)}`);
  }
  /** @type {Map<string, number>} */
  const exact = new Map();
  /** @type {Array<[string, number]>} */
  const prefixes = [];
  const limits = new Set();
  overrides.forEach((override, i) => {
    const at = `${path}[${i}]`;
    if (override === null || typeof override !== "object" || Array.isArray(override)) {
      throw new SluiceConfigError(at, `must be { key, limit } or { prefix, limit }; got ${describe(override)}`);
    }
    for (const field of Object.keys(override)) {
      if (!["key", "prefix", "limit"].includes(field)) throw new SluiceConfigError(`${at}.${field}`, "is not a field of an override (key or prefix, and limit)");
    }
    if ((override.key === undefined) === (override.prefix === undefined)) {
      throw new SluiceConfigError(`${at}.key`, "give exactly one of key and prefix");
    }
    const field = override.key !== undefined ? "key" : "prefix";
    const text = override[field];
    if (typeof text !== "string" || text.length < 1 || text.length > 512) {
      throw new SluiceConfigError(`${at}.${field}`, `must be a string of 1 to 512 characters; got ${describe(text)}`);
    }
    const { limit } = override;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new SluiceConfigError(`${at}.limit`, `must be a whole number >= 1; got ${describe(limit)}`);
    if (field === "key") {
      if (exact.has(text)) throw new SluiceConfigError(`${at}.key`, `${describe(text)} is overridden twice`);
      exact.set(text, limit);
    } else {
      if (prefixes.some(([p]) => p === text)) throw new SluiceConfigError(`${at}.prefix`, `${describe(text)} is overridden twice`);
      prefixes.push([text, limit]);
    }
    limits.add(limit);
  });
  if (limits.size > MAX_OVERRIDE_LIMITS) {
    throw new SluiceConfigError(path, `gives ${limits.size} distinct limits; at most ${MAX_OVERRIDE_LIMITS} (each is a table of its own)`);
  }
  // Longest prefix first: the most specific override wins.
  prefixes.sort((a, b) => b[0].length - a[0].length);
  /**
   * @param {unknown} keyText what the rule's key function produced
   * @returns {number | undefined}
   */
  function overrideOf(keyText) {
    if (typeof keyText !== "string") return undefined;
    const found = exact.get(keyText);
    if (found !== undefined) return found;
    for (const [prefix, limit] of prefixes) if (keyText.startsWith(prefix)) return limit;
    return undefined;
  }
  return { overrideOf, limits: [...limits] };
}
