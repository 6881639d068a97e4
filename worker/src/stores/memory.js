// The memory store: counters in this isolate's sluice.wasm instance (see isolate.js). Fast and
// synchronous, and per isolate: each isolate (and each Cloudflare location) counts on its own.
import { decideInIsolate, memoryTable, resetInIsolate } from "../engine/isolate.js";

/** @import { IsolateTable, NormalizedRule, Outcome, StoreCheck, TimedStoreOptions } from "./store.js" */

/**
 * The store that decides checks in the isolate's own sluice.wasm instance, synchronously, at options.nowMs.
 * @typedef {{
 *   readonly name: "memory";
 *   decide(checks: readonly StoreCheck[], options: TimedStoreOptions): Outcome;
 *   reset(checks: readonly StoreCheck[]): void;
 *   isolateTables(rule: NormalizedRule): IsolateTable[];
 * }} MemoryStore
 */

/**
 * createMemoryStore returns the store that decides checks in the isolate's instance. It implements the
 * store contract: decide(checks, { nowMs, peek }) -> Outcome with store "memory", synchronously.
 * Every memory store of an isolate counts in the same instance.
 * @returns {MemoryStore}
 */
export function createMemoryStore() {
  return Object.freeze({
    name: /** @type {const} */ ("memory"),
    /** @param {readonly StoreCheck[]} checks @param {TimedStoreOptions} options @returns {Outcome} */
    decide(checks, options) {
      return decideInIsolate(checks, options.nowMs, options.peek === true);
    },
    /** @param {readonly StoreCheck[]} checks */
    reset(checks) {
      resetInIsolate(checks);
    },
    /** @param {NormalizedRule} rule */
    isolateTables(rule) {

      return [memoryTable(rule)];
    },
  });
}
