// Types of gateway.js: createGateway and the limiter seam it is built around.

import type { RateLimitDecision } from "../limiter.js";
import type { GatewayConfig, GatewayConfigInput, GatewayRoute, GatewayRule, StoresInput } from "./config.js";
import type { GatewayMetrics } from "./metrics.js";

export type { GatewayConfig, GatewayConfigInput, GatewayRoute, GatewayRule, RuleInput, StoresInput } from "./config.js";
export { CONFIG_VAR, ConfigError, resolveConfig, validateConfig } from "./config.js";
export { GatewayMetrics } from "./metrics.js";

/** What a limiter answers for one request: sluice's decision (every given rule checked, all-or-nothing), or its dev bypass. */
export type LimiterOutcome = RateLimitDecision;

export interface GatewayLimiter {
  limit(request: Request, env: unknown, ctx: unknown): Promise<LimiterOutcome> | LimiterOutcome;
  /** The response headers of a bypassed decision (X-RateLimit-Bypassed). */
  headers?(decision: LimiterOutcome): Array<[string, string]>;
}

/**
 * Makes the limiter of some rules of one route, all of one store. Limiters made for different subsets
 * of a route's rules must share each rule's state (sluice's do: rules are registered by a stable id).
 */
export type LimiterFactory = (rules: GatewayRule[], context: { route: GatewayRoute }) => GatewayLimiter;

/**
 * sluice's own limiter factory: createLimiter() per store group, on the configuration's `stores` and
 * `clock` (default: the wall clock). Throws ConfigError naming the rule for what the host refuses.
 */
export declare function createLimiterFactory(options?: { stores?: StoresInput; clock?: () => number }): LimiterFactory;

export interface GatewayOptions {
  /** The clock in milliseconds; default the host's (clock.js). */
  now?: () => number;
  /** Default: createLimiterFactory({ stores: config.stores, clock: now }). */
  limiterFactory?: LimiterFactory;
  /** Receives one JSON line per request; default console.log. */
  log?: (line: string) => void;
  metrics?: GatewayMetrics;
}

export interface Gateway {
  fetch(request: Request, env: object, ctx: { waitUntil(promise: Promise<unknown>): void }): Promise<Response>;
  readonly metrics: GatewayMetrics;
  readonly config: GatewayConfig;
}

/** Builds the gateway; throws ConfigError for an invalid configuration, TypeError for bad options. */
export declare function createGateway(config: GatewayConfig | GatewayConfigInput, options?: GatewayOptions): Gateway;
