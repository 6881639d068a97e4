// The demo Worker (wrangler.toml's main): the demo API on the wall clock. With ENV=dev
// (`wrangler dev --var ENV:dev`) every limit is bypassed and responses say so.
import { createDemoApp } from "./demo.js";

export default createDemoApp();
