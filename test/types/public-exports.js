// The run-time exports of each public module, by name: exports.ts holds every module's .d.ts to this
// list (its value exports, neither more nor fewer), and test/js/types.test.js holds the module itself
// to it. So a name the types promise is one the module has, and the other way round.
export const PUBLIC_EXPORTS = /** @type {const} */ ({
  sluice: [
    "SluiceConfigError",
    "apiKey",
    "compose",
    "createDurableStore",
    "createFallbackChain",
    "createKvStore",
    "createLimiter",
    "createMemoryStore",
    "firstOf",
    "ip",
    "isolateStats",
    "route",
    "storeStats",
    "user",
  ],
  "sluice/hono": ["SluiceConfigError", "apiKey", "compose", "firstOf", "ip", "rateLimit", "route", "user"],
  "sluice/durable-object": ["SluiceDurableObject"],
  "sluice/core": ["ABI_VERSION", "ALGORITHMS", "MAX_CHECKS_PER_CALL", "MAX_KEY_BYTES", "SluiceCore", "SluiceError", "Status", "sluiceWasm"],
  "wasm-bindings/sluice.js": ["ABI_VERSION", "ALGORITHMS", "MAX_CHECKS_PER_CALL", "MAX_KEY_BYTES", "SluiceCore", "SluiceError", "Status"],
  "worker/src/gateway/gateway.js": [
    "CONFIG_VAR",
    "ConfigError",
    "GatewayMetrics",
    "createGateway",
    "createLimiterFactory",
    "resolveConfig",
    "validateConfig",
  ],
});
