// sluice: rate limiting for Cloudflare Workers. The framework-free entry; the Hono middleware is sluice/hono.
export { createLimiter } from "./limiter.js";
export type { BypassedDecision, CheckedDecision, Limiter, LimiterOptions, RateLimitDecision, SkippedDecision } from "./limiter.js";
export { apiKey, compose, firstOf, ip, route, user } from "./keys.js";
export type { IpOptions, KeyFunction, KeyHelper, KeyInput, KeyPart, KeySource } from "./keys.js";
export { isolateStats } from "./isolate.js";
export type { IsolateStats } from "./isolate.js";
export { SluiceConfigError } from "./errors.js";
export type { CommonOptions, HeaderMode, RuleOptions } from "./options.js";
export type { NormalizedRule, Outcome, Store, StoreCheck, StoreOptions } from "./stores/store.js";
export type { AlgorithmName, Decision } from "../../wasm-bindings/sluice.js";
