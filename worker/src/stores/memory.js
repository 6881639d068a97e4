// The memory store: counters in this isolate's sluice.wasm instance (see isolate.js). Fast and
// synchronous, and per isolate: each isolate (and each Cloudflare location) counts on its own.
import { decideInIsolate, memoryTable, resetInIsolate } from "../isolate.js";

/**
 * createMemoryStore returns the store that decides checks in the isolate's instance. It implements the
 * store contract: decide(checks, { nowMs, peek }) -> Outcome with store "memory", synchronously.
 * Every memory store of an isolate counts in the same instance. reset(checks) forgets the given
 * (rule, key) pairs, synchronously.
 */
export function createMemoryStore() {
  return Object.freeze({
    name: "memory",
    decide(checks, options) {
      return decideInIsolate(checks, options.nowMs, options.peek === true);
    },
    reset(checks) {
      resetInIsolate(checks);
    },
    isolateTables(rule) {
      return [memoryTable(rule)];
    },
  });
}
