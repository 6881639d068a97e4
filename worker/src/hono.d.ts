// sluice/hono: the rate-limit middleware for Hono.
import type { Context, Env, MiddlewareHandler } from "hono";
import type { BypassedDecision, CheckedDecision } from "./limiter.js";
import type { CommonOptions } from "./options.js";
import type { ConcurrencyDecision, ConcurrencyOptions } from "./sluice.js";

export { apiKey, compose, firstOf, ip, route, user } from "./keys.js";
export type { IpOptions, KeyFunction, KeyHelper, KeySource } from "./keys.js";
export { SluiceConfigError } from "./errors.js";
export type { BypassedDecision, CheckedDecision, RateLimitDecision } from "./limiter.js";
export type { HeaderMode, RuleOptions, RuleQuota } from "./options.js";

/** The middleware's own option. */
export interface OnLimitedOption<E extends Env = any> {
  /** Builds the response to a denied request (undefined: the default 429); rate-limit headers are added to it. */
  onLimited?: (c: Context<E>, decision: CheckedDecision) => Response | undefined | Promise<Response | undefined>;
}

/** The middleware's options: key, cost and skip functions receive the context. */
export type RateLimitOptions<E extends Env = any> = CommonOptions<[c: Context<E>]> & OnLimitedOption<E>;

// The parameter spells RateLimitOptions<E> out: through the alias, TypeScript infers the context of
// user((c) => ...) in `key` as Context<never>, and refuses it.
/**
 * rateLimit returns a Hono middleware limiting the requests it sees; the decision is c.get("rateLimit").
 * Throws SluiceConfigError naming the option for invalid configuration.
 */
export declare function rateLimit<E extends Env = any>(options: CommonOptions<[c: Context<E>]> & OnLimitedOption<E>): MiddlewareHandler<E>;

/** concurrency returns a Hono middleware holding a slot from before the handler until the response ends; see docs/concurrency.md. */
export declare function concurrency<E extends Env = any>(
  options: ConcurrencyOptions<[c: Context<E>], (c: Context<E>, decision: ConcurrencyDecision) => Response | undefined | Promise<Response | undefined>>,
): MiddlewareHandler<E>;

declare module "hono" {
  interface ContextVariableMap {
    /** The decision of the rate-limit middleware that ran last for this request (unset when skipped). */
    rateLimit: CheckedDecision | BypassedDecision;
    /** The decision of the concurrency middleware that ran last for this request (unset when skipped). */
    concurrency: ConcurrencyDecision;
  }
}
