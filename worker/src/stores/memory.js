// The memory store: counters in this isolate's sluice.wasm instance (see isolate.js). Fast and
// synchronous, and per isolate: each isolate (and each Cloudflare location) counts on its own.
import { decideInIsolate } from "../isolate.js";

/**
 * createMemoryStore returns the store that decides checks in the isolate's instance. It implements the
 * store contract: decide(checks, { nowMs, peek }) -> Outcome with store "memory", synchronously.
 */
export function createMemoryStore() {
  return Object.freeze({
    kind: "memory",
    decide(checks, options) {
      return decideInIsolate(checks, options.nowMs, options.peek === true);
    },
  });
}
