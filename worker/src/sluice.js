// sluice: rate limiting for Cloudflare Workers, decided by a C++ core compiled to WebAssembly.
// The framework-free entry; the Hono middleware is sluice/hono, the Durable Object class
// sluice/durable-object (it imports cloudflare:workers, so it has an entry of its own).
export { createLimiter } from "./limiter.js";
export { apiKey, compose, firstOf, ip, route, user } from "./keys.js";
export { isolateStats } from "./isolate.js";
export { storeStats } from "./stores/registry.js";
export { createMemoryStore } from "./stores/memory.js";
export { createDurableStore } from "./stores/durable.js";
export { createKvStore } from "./stores/kv.js";
export { createRedisStore } from "./stores/redis.js";
export { createFallbackChain } from "./stores/chain.js";
export { SluiceConfigError } from "./errors.js";
