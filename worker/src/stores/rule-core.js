// A SluiceCore whose rules are registered lazily, by the stable id of a normalized rule, so that any
// isolate or Durable Object can be handed a rule it has never seen and count it the same way. The
// isolate's own instance (isolate.js), each Durable Object and each KV store's views use one.
// #sluice-wasm is the compiled core, found the way this runtime can load it (package.json "imports").
import sluiceWasm from "#sluice-wasm";
import { SluiceCore } from "../../../wasm-bindings/sluice.js";

// The core holds at most this many rules (sluice::Limiter::kMaxRules).
export const MAX_RULES = 64;

/**
 * RuleCore maps normalized rules to rule indices of one SluiceCore, created on first use.
 *
 * `specOf(rule)` turns a normalized rule into what SluiceCore.addRule takes; it is where a store says
 * how big a key table it wants (and, for KV, which algorithm approximates the rule).
 * When a 65th distinct rule arrives, or the owner discards a failed core, the next use gets a fresh
 * core. Whatever the old core held is gone: `generation` changes, so owners that keep their truth
 * outside the core (the Durable Object, the KV views) know to reload it.
 */
export class RuleCore {
  #specOf;
  #createCore;
  #core = null;
  #indexById = new Map();
  #generation = 0;

  constructor(specOf, createCore = () => SluiceCore.instantiate(sluiceWasm)) {
    this.#specOf = specOf;
    this.#createCore = createCore;
  }

  /** core is the current SluiceCore (created now if there is none); it changes when `generation` does. */
  get core() {
    if (this.#core === null) this.#core = this.#createCore();
    return this.#core;
  }

  /** live reports whether a core exists, without creating one. */
  get live() {
    return this.#core !== null;
  }

  /** generation counts the cores dropped so far; a change means every key state was forgotten. */
  get generation() {
    return this.#generation;
  }

  /** registered lists [rule id, index] of the rules registered in the current core. */
  registered() {
    return this.#indexById.entries();
  }

  /**
   * indicesOf registers every rule of `checks` not yet known and returns their indices, in order,
   * all valid in the same core (it may replace the core first to make room).
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
