// Types of gateway.js: createGateway and the limiter seam it is built around.

import type { Decision } from "../../../wasm-bindings/sluice.js";
import type { GatewayConfig, GatewayConfigInput, GatewayRoute, GatewayRule } from "./config.js";
import type { GatewayMetrics } from "./metrics.js";

export type { GatewayConfig, GatewayConfigInput, GatewayRoute, GatewayRule } from "./config.js";
export { CONFIG_VAR, ConfigError, resolveConfig, validateConfig } from "./config.js";
export { GatewayMetrics } from "./metrics.js";

/** One rule's decision as the limiter reports it. */
export interface CheckDecision extends Decision {
  /** The key the rule was checked under; needed for a partial rollout (without it, the rule is enforced). */
  key?: string;
}

/** What a limiter answers for one request: every given rule checked, all-or-nothing. */
export interface LimiterOutcome extends Decision {
  /** Parallel to the rules the limiter was made for. */
  checks: CheckDecision[];
  /** Present when a fallback store decided because the configured one failed. */
  fallback?: { from: string; reason: string };
  [extra: string]: unknown;
}

export interface GatewayLimiter {
  limit(request: Request, env: unknown, ctx: unknown): Promise<LimiterOutcome> | LimiterOutcome;
}

/**
 * Makes the limiter of some rules of one route. Limiters made for different subsets of a route's
 * rules must share each rule's state (sluice's do: rules are registered by a stable id).
 */
export type LimiterFactory = (rules: GatewayRule[], context: { route: GatewayRoute }) => GatewayLimiter;

/** The outcome the rate-limit headers describe: `allowed` is the request's fate. */
export interface MergedOutcome extends Decision {
  decidingCheck: number;
  checks: CheckDecision[];
}

export interface GatewayOptions {
  limiterFactory: LimiterFactory;
  /** The clock in milliseconds (the host's clock.js). */
  now: () => number;
  /** Rate-limit headers for a request's merged outcome; `rules` is parallel to outcome.checks. */
  rateLimitHeaders?: (outcome: MergedOutcome, rules: GatewayRule[]) => HeadersInit | null | undefined;
  /** Receives one JSON line per request; default console.log. */
  log?: (line: string) => void;
  metrics?: GatewayMetrics;
}

export interface Gateway {
  fetch(request: Request, env: Record<string, unknown>, ctx: { waitUntil(promise: Promise<unknown>): void }): Promise<Response>;
  readonly metrics: GatewayMetrics;
  readonly config: GatewayConfig;
}

/** Builds the gateway; throws ConfigError for an invalid configuration, TypeError for bad options. */
export declare function createGateway(config: GatewayConfig | GatewayConfigInput, options: GatewayOptions): Gateway;
