import { createFallbackChain } from "sluice";   // worker/src/stores/chain.js
const store = createFallbackChain({ primary: durable, kv, memory, failMode: "closed", timeoutMs: 50 });
