// Everything the replay takes from the library and the gateway, in one place: the replay decides with
// the Worker's own modules (routing, canonical paths, key functions, rule validation, the limiter and
// the core), never with copies of them.
export { canonicalPath } from "../../src/http/paths.js";
export { apiKey, bearerToken, compose, firstOf, ip, route, user } from "../../src/http/keys.js";
export { createEngine, createLimiter } from "../../src/engine/limiter.js";
export { SluiceConfigError } from "../../src/engine/errors.js";
export { tableBytes } from "../../src/engine/isolate.js";
export { normalizeRuleSpec } from "../../src/engine/options.js";
export { nowMs } from "../../src/engine/clock.js";
export { validateConfig, ConfigError } from "../../gateway/config.js";
export { createRouter } from "../../gateway/routes.js";
export { decide } from "../../gateway/decide.js";
export { createLimiterFactory } from "../../gateway/limiter.js";
export { upstreamTarget } from "../../gateway/target.js";
export { createAccessList } from "../../src/features/lists/access-list.js";
export { ALGORITHMS, SluiceCore, SluiceError } from "../../../wasm-bindings/sluice.js";
export { sluiceWasm } from "../../../wasm-bindings/core.js";
