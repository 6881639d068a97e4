// The demo Worker (wrangler.toml's main): the demo API on the wall clock. With ENV=dev
// (`wrangler dev --var ENV:dev`) every limit is bypassed and responses say so.
import { createDemoApp } from "./demo.js";

// wrangler.toml binds this class as SLUICE_DO: the Durable Object store's exact counters.
export { SluiceDurableObject } from "./stores/durable-object.js";

export default createDemoApp();
