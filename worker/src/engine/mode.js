// What a rule's decision means for the request, given the rule's mode:
//  - enforce: a denial blocks the request;
//  - shadow:  the decision is computed (and shown in the headers) but never blocks; a denial is counted
//             as "would have denied";
//  - bypass:  the rule is not evaluated at all.
// An enforced rule with a rollout below 1 is enforced for a stable share of keys and shadowed for the
// rest. Which share is fixed by a hash of (rule name, key), so every isolate and every Durable Object
// agrees, and a key stays on the same side while the fraction does not change; raising the fraction
// only adds keys to the enforced side.

/** @import { Decision } from "../../../wasm-bindings/sluice.js" */
/** @typedef {"enforce" | "shadow" | "bypass"} Mode */
/**
 * What a rule's mode depends on: its name (which keys a rollout enforces is a hash of name and key),
 * its mode and the share of keys it enforces.
 * @typedef {{ name: string, mode: Mode, rollout: number }} ModedRule
 */

/** @type {readonly Mode[]} */
export const MODES = /* @__PURE__ */ Object.freeze(["enforce", "shadow", "bypass"]);

/**
 * The 32-bit FNV-1a hash of the UTF-8 bytes of `text`, as an unsigned integer.
 * @param {string} text
 * @returns {number}
 */
export function fnv1a32(text) {
  let hash = 0x811c9dc5;
  /** @param {number} byte */
  const step = (byte) => {
    hash = Math.imul(hash ^ byte, 0x01000193);
  };
  for (let i = 0; i < text.length; i++) {
    let code = /** @type {number} */ (text.codePointAt(i));
    if (code > 0xffff) i++;
    if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd; // a lone surrogate encodes as U+FFFD
    if (code < 0x80) {
      step(code);
    } else if (code < 0x800) {
      step(0xc0 | (code >> 6));
      step(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      step(0xe0 | (code >> 12));
      step(0x80 | ((code >> 6) & 0x3f));
      step(0x80 | (code & 0x3f));
    } else {
      step(0xf0 | (code >> 18));
      step(0x80 | ((code >> 12) & 0x3f));
      step(0x80 | ((code >> 6) & 0x3f));
      step(0x80 | (code & 0x3f));
    }
  }
  return hash >>> 0;
}

// MurmurHash3's finaliser: FNV-1a alone barely moves the top bits when only the last byte differs
// (keys like ip:10.0.0.1, ip:10.0.0.2), and the rollout compares exactly those top bits.
/** @param {number} h */
function fmix32(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Where (rule, key) falls in [0, 1): the same on every isolate, for every release of sluice.
 * @param {string} ruleName
 * @param {string} key
 * @returns {number}
 */
export function rolloutPoint(ruleName, key) {
  return fmix32(fnv1a32(`${ruleName}\n${key}`)) / 0x1_0000_0000;
}

/**
 * The mode a rule runs in for one key: "bypass", "shadow" or "enforce". A partly rolled-out rule
 * whose key is unknown is enforced: when in doubt, the stricter side.
 * @param {ModedRule} rule
 * @param {string | undefined} key
 * @returns {Mode}
 */
export function effectiveMode(rule, key) {
  if (rule.mode !== "enforce") return rule.mode;
  if (rule.rollout >= 1) return "enforce";
  if (rule.rollout <= 0) return "shadow";
  if (typeof key !== "string") return "enforce";
  return rolloutPoint(rule.name, key) < rule.rollout ? "enforce" : "shadow";
}

/**
 * What a decision counts as under a mode: "admitted", "denied" or "would_have_denied".
 * @param {Mode} mode
 * @param {Decision} decision
 * @returns {"admitted" | "denied" | "would_have_denied"}
 */
export function ruleEvent(mode, decision) {
  if (decision.allowed) return "admitted";
  return mode === "enforce" ? "denied" : "would_have_denied";
}

/**
 * True when an admitted decision leaves its key with 80 % or more of its limit used.
 * @param {Decision} decision
 * @returns {boolean}
 */
export function isNearLimit(decision) {
  return decision.allowed && 5 * (decision.limit - decision.remaining) >= 4 * decision.limit;
}
