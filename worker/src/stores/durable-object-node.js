// sluice/durable-object under Node (its "node" export condition). The real class extends DurableObject
// from cloudflare:workers, which Node cannot load (ERR_UNSUPPORTED_ESM_URL_SCHEME), so a Worker's main
// module that exports it could not be imported by a unit test. Here it is a stand-in: importing works,
// extending works, constructing throws, saying where the object runs. Like the real module, loading it
// lets options name store "durable".
import { durableStore } from "./kinds/durable.js";
import { registerStoreKind } from "./registry.js";

registerStoreKind(durableStore);

/**
 * SluiceDurableObject's stand-in under Node: a Durable Object runs only inside workerd. Test code that
 * needs the object runs it there (vitest-pool-workers, Miniflare: docs/testing.md).
 */
export class SluiceDurableObject {
  /** @param {...unknown} _args */
  constructor(..._args) {
    throw new Error(
      "sluice: SluiceDurableObject runs only inside workerd (wrangler dev, Miniflare, vitest-pool-workers); under Node, sluice/durable-object is a stand-in so that a Worker exporting it can be imported. See docs/testing.md",
    );
  }
}
