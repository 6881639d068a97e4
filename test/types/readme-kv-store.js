rateLimit({ key, limit: 100, windowSec: 60, store: "kv" });   // through the middleware
import { createKvStore } from "sluice";                       // or on its own (worker/src/stores/kv.js)
const kv = createKvStore({ binding: "SLUICE_KV" });
// kv.decide(checks, { nowMs, env, ctx }) -> Outcome | Promise<Outcome>   (store: "kv")
