// sluice/hono: the rate-limit middleware for Hono.
import type { Context, Env, MiddlewareHandler } from "hono";
import type { BypassedDecision, CheckedDecision } from "./limiter.js";
import type { CommonOptions } from "./options.js";
import type { LockoutAttempt, LockoutOptions } from "./sluice.js";

export { apiKey, compose, firstOf, ip, route, user } from "./keys.js";
export type { IpOptions, KeyFunction, KeyHelper, KeySource } from "./keys.js";
export { SluiceConfigError } from "./errors.js";
export { jsonField, normalizeAccount } from "./sluice.js";
export type { LockoutAttempt, LockoutOptions } from "./sluice.js";
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

/** Account lockout for Hono (docs/lockout.md): refuses locked attempts, counts failed ones. */
export declare function lockout<E extends Env = any>(options: LockoutOptions<[c: Context<E>]>): MiddlewareHandler<E>;

declare module "hono" {
  interface ContextVariableMap {
    /** The login attempt as the lockout middleware judged it (unset on routes without it). */
    lockout: LockoutAttempt;
    /** The decision of the rate-limit middleware that ran last for this request (unset when skipped). */
    rateLimit: CheckedDecision | BypassedDecision;
  }
}
