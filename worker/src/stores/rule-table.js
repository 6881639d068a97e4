// A core whose rules are registered lazily, by the stable id of a normalized rule, so that any
// isolate or Durable Object can be handed a rule it has never seen and count it the same way. The
// isolate's own instance (isolate.js, a CoreBase: deciding is all it needs) uses one; each Durable
// Object and each KV store's views use a RuleCore (rule-core.js), whose cores are SluiceCores.

/** @import { CoreBase, RuleSpec } from "../../../wasm-bindings/core-base.js" */
/** @import { NormalizedRule } from "./store.js" */

// The core holds at most this many rules (sluice::Limiter::kMaxRules).
export const MAX_RULES = /** @type {const} */ (64);

/**
 * RuleTable maps normalized rules to rule indices of one core, created on first use by `createCore`.
 *
 * `specOf(rule)` turns a normalized rule into what CoreBase.addRule takes; it is where a store says
 * how big a key table it wants (and, for KV, which algorithm approximates the rule).
 * When a 65th distinct rule arrives, or the owner discards a failed core, the next use gets a fresh
 * core. Whatever the old core held is gone: `generation` changes, so owners that keep their truth
 * outside the core (the Durable Object, the KV views) know to reload it.
 * @template {CoreBase} C
 */
export class RuleTable {
  /** @type {(rule: NormalizedRule) => RuleSpec} */
  #specOf;
  /** @type {() => C} */
  #createCore;
  /** @type {C | null} */
  #core = null;
  /** @type {Map<string, number>} */
  #indexById = new Map();
  #generation = 0;

  /**
   * @param {(rule: NormalizedRule) => RuleSpec} specOf
   * @param {() => C} createCore
   */
  constructor(specOf, createCore) {
    this.#specOf = specOf;
    this.#createCore = createCore;
  }

  /** core is the current core (created now if there is none); it changes when `generation` does. */
  /** @type {C} */
  get core() {
    if (this.#core === null) this.#core = this.#createCore();
    return /** @type {C} */ (this.#core);
  }

  /** live reports whether a core exists, without creating one. */
  /** @type {boolean} */
  get live() {
    return this.#core !== null;
  }

  /** generation counts the cores dropped so far; a change means every key state was forgotten. */
  /** @type {number} */
  get generation() {
    return this.#generation;
  }

  /** registered lists [rule id, index] of the rules registered in the current core. */
  /** @returns {IterableIterator<[string, number]>} */
  registered() {
    return this.#indexById.entries();
  }

  /**
   * indicesOf registers every rule of `checks` not yet known and returns their indices, in order,
   * all valid in the same core (it may replace the core first to make room).
   * @param {ReadonlyArray<{ rule: NormalizedRule }>} checks
   * @returns {number[]}
   */
  indicesOf(checks) {
    let unknown = 0;
    for (let i = 0; i < checks.length; i++) {
      if (!this.#indexById.has(checks[i].rule.id)) unknown++;
    }
    if (unknown > 0 && this.#indexById.size + unknown > MAX_RULES) this.discard();
    const indices = new Array(checks.length);
    for (let i = 0; i < checks.length; i++) indices[i] = this.#indexOf(checks[i].rule);
    return indices;
  }

  /** discard drops the core and its rules; the next use creates a fresh core. */
  discard() {
    this.#core = null;
    this.#indexById.clear();
    this.#generation++;
  }

  /** @param {NormalizedRule} rule @returns {number} */
  #indexOf(rule) {
    let index = this.#indexById.get(rule.id);
    if (index === undefined) {
      if (typeof rule.id !== "string" || rule.id === "") {
        throw new TypeError(`rule.id must be a non-empty string; got ${String(rule.id)}`);
      }
      index = this.core.addRule(this.#specOf(rule));
      this.#indexById.set(rule.id, index);
    }
    return index;
  }
}
