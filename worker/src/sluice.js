// sluice: rate limiting for Cloudflare Workers, decided by a C++ core compiled to WebAssembly.
// The framework-free entry; the Hono middleware is sluice/hono.
export { createLimiter } from "./limiter.js";
export { apiKey, compose, firstOf, ip, route, user } from "./keys.js";
export { isolateStats } from "./isolate.js";
export { SluiceConfigError } from "./errors.js";
