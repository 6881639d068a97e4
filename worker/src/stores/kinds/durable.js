// sluice/stores/durable: exact counts in a Durable Object, falling back to KV (if bound), then the
// isolate's memory, then failMode; with `lease`, hot keys decided from quota the object lent.
//
//   import { durableStore } from "sluice/stores/durable";
//   rateLimit({ key: user(fn), limit: 5, windowSec: 60, store: durableStore, timeoutMs: 30 });
//
// Loading this module also lets options say store: "durable".
import { createDurableStore } from "../durable.js";
import { createKvStore } from "../kv.js";
import { checkLeaseOptions, createLeasedStore } from "../leases.js";
import { hintId } from "../location-hints.js";
import { createRegionalStore } from "../regional.js";
import { registerStoreKind } from "../registry.js";
import { buildRemoteStore } from "../remote.js";

/** @import { StoreKind } from "../registry.js" */

/**
 * durableStore is the value of the `store` option for counts in a Durable Object (bound as SLUICE_DO
 * unless `bindings.durable` says otherwise); its settings sit beside it in the options.
 * @type {StoreKind<"durable">}
 */
export const durableStore = Object.freeze({
  kind: "durable",
  build: (options) => buildRemoteStore("durable", options, { createDurableStore, createKvStore, createLeasedStore, checkLeaseOptions, createRegionalStore, hintId }),
});
registerStoreKind(durableStore);
