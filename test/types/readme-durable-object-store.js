// The Worker's main module must export the class (this repo's: worker/index.js):
export { SluiceDurableObject } from "sluice/durable-object";   // worker/src/stores/durable-object.js

// Through the middleware:
rateLimit({ key, limit: 5, windowSec: 60, store: "durable", shards: 8 });
// Or the store on its own (worker/src/stores/durable.js):
import { createDurableStore } from "sluice";
const durable = createDurableStore({ binding: "SLUICE_DO", shards: 8 });
// durable.decide(checks, { env, ctx }) -> Promise<Outcome>   (store: "durable")
