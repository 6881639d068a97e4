// Everything the replay takes from the library and the gateway, in one place: the replay decides with
// the Worker's own modules (routing, canonical paths, key functions, rule validation, the limiter and
// the core), never with copies of them.
export { canonicalPath } from "../../src/paths.js";
export { apiKey, bearerToken, compose, firstOf, ip, user } from "../../src/keys.js";
export { createLimiter } from "../../src/limiter.js";
export { SluiceConfigError } from "../../src/errors.js";
export { isolateTestHooks } from "../../src/isolate.js";
export { tableBytes } from "../../src/isolate.js";
export { normalizeRuleSpec } from "../../src/options.js";
export { validateConfig, ConfigError } from "../../src/gateway/config.js";
export { createRouter } from "../../src/gateway/routes.js";
export { decide } from "../../src/gateway/decide.js";
export { createLimiterFactory, keyPart } from "../../src/gateway/limiter.js";
export { ALGORITHMS, SluiceCore, SluiceError } from "../../../wasm-bindings/sluice.js";
export { sluiceWasm } from "../../../wasm-bindings/core.js";
export { nowMs } from "../../src/clock.js";
