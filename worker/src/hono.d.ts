// sluice/hono: the rate-limit middleware for Hono.
import type { Context, Env, MiddlewareHandler } from "hono";
import type { BypassedDecision, CheckedDecision } from "./limiter.js";
import type { CommonOptions } from "./options.js";

export { apiKey, compose, firstOf, ip, route, user } from "./keys.js";
export type { IpOptions, KeyFunction, KeyHelper, KeySource } from "./keys.js";
export { SluiceConfigError } from "./errors.js";
export type { BypassedDecision, CheckedDecision, RateLimitDecision } from "./limiter.js";
export type { HeaderMode, RuleOptions } from "./options.js";

/** The middleware's options: key, cost and skip functions receive the context. */
export interface RateLimitOptions<E extends Env = any> extends CommonOptions<[c: Context<E>]> {
  /** Builds the response to a denied request (undefined: the default 429); rate-limit headers are added to it. */
  onLimited?: (c: Context<E>, decision: CheckedDecision) => Response | undefined | Promise<Response | undefined>;
}

/**
 * rateLimit returns a Hono middleware limiting the requests it sees; the decision is c.get("rateLimit").
 * Throws SluiceConfigError naming the option for invalid configuration.
 */
export declare function rateLimit<E extends Env = any>(options: RateLimitOptions<E>): MiddlewareHandler<E>;

declare module "hono" {
  interface ContextVariableMap {
    /** The decision of the rate-limit middleware that ran last for this request (unset when skipped). */
    rateLimit: CheckedDecision | BypassedDecision;
  }
}
