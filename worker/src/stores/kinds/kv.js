// sluice/stores/kv: approximate counts in Workers KV (fixed windows, coalesced reads and writes),
// falling back to the isolate's memory, then failMode.
//
//   import { kvStore } from "sluice/stores/kv";
//   rateLimit({ key: ip(), limit: 100, windowSec: 60, store: kvStore });
//
// Loading this module also lets options say store: "kv".
import { createKvStore } from "../kv.js";
import { registerStoreKind } from "../registry.js";
import { buildRemoteStore } from "../remote.js";

/** @import { StoreKind } from "../registry.js" */

/**
 * kvStore is the value of the `store` option for counts in Workers KV (bound as SLUICE_KV unless
 * `bindings.kv` says otherwise); its settings sit beside it in the options.
 * @type {StoreKind<"kv">}
 */
export const kvStore = Object.freeze({
  kind: "kv",
  build: (options) => buildRemoteStore("kv", options, { createKvStore }),
});
registerStoreKind(kvStore);
