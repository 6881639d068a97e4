// sluice/hono: the rate-limit middleware for Hono.
//
//   app.use("/api/*", rateLimit({ key: ip(), limit: 120, windowSec: 60 }));
//
// A denied request gets a 429 (or what onLimited returns); an admitted one runs the handler, and its
// response carries the rate-limit headers. Either way the decision is c.get("rateLimit").
import { withHeaders } from "./headers.js";
import { createEngine, responseHeaders } from "./limiter.js";
import { limitedResponse } from "./responses.js";
import { executionContextOf } from "./execution-context.js";

export { apiKey, compose, firstOf, ip, route, user } from "./keys.js";
export { SluiceConfigError } from "./errors.js";
export { lockout } from "./lockout-middleware.js";
export { jsonField, normalizeAccount } from "./account.js";
export { concurrency } from "./concurrency/hono.js";

/** @import { Context, Env, MiddlewareHandler } from "hono" */
/** @import { CommonOptions } from "./options.js" */

// The types users of sluice/hono need, re-exported from the modules that define them.
/** @typedef {import("./concurrency/engine.js").ConcurrencyDecision} ConcurrencyDecision */
/** @template {unknown[]} [Args=any[]] @typedef {import("./concurrency/options.js").ConcurrencyCommonOptions<Args>} ConcurrencyOptions */
/** @typedef {import("./keys.js").IpOptions} IpOptions */
/** @template {unknown[]} [Args=any[]] @typedef {import("./keys.js").KeyFunction<Args>} KeyFunction */
/** @typedef {import("./keys.js").KeyHelper} KeyHelper */
/** @template {unknown[]} [Args=any[]] @typedef {import("./keys.js").KeySource<Args>} KeySource */
/** @typedef {import("./limiter.js").BypassedDecision} BypassedDecision */
/** @typedef {import("./limiter.js").CheckedDecision} CheckedDecision */
/** @typedef {import("./limiter.js").RateLimitDecision} RateLimitDecision */
/** @typedef {import("./options.js").HeaderMode} HeaderMode */
/** @typedef {import("./options.js").LimitFunction} LimitFunction */
/** @template {unknown[]} [Args=any[]] @typedef {import("./options.js").RuleOptions<Args>} RuleOptions */
/** @typedef {import("./options.js").RuleQuota} RuleQuota */
/** @template {unknown[]} [Args=any[]] @typedef {import("./lockout-options.js").LockoutOptions<Args>} LockoutOptions */
/** @typedef {import("./lockout.js").LockoutAttempt} LockoutAttempt */

/**
 * The decision the middleware sets as c.get("rateLimit"): a checked request, or one the dev bypass let
 * through. c.get("rateLimit") is undefined where the middleware did not set one (`skip` let the request
 * through, or the route has no rate-limit middleware), so its type is `MiddlewareDecision | undefined`.
 * @typedef {CheckedDecision | BypassedDecision} MiddlewareDecision
 */

/**
 * What the function rateLimit returns carries besides being a middleware: the limiter's peek, get and
 * reset, given a context (or anything its key functions accept), for tests and admin routes.
 * `peek(c)`: the decision the middleware would take now, charging nothing. `get(c)`: the counters of
 * the request's keys as they stand (a cost of 1, peeked). `reset(c)`: forgets the request's keys.
 * @template {Env} [E=any]
 * @typedef {object} RateLimitHandle
 * @property {(c: Context<E>) => Promise<import("./limiter.js").RateLimitDecision>} peek
 * @property {(c: Context<E>) => Promise<CheckedDecision>} get
 * @property {(c: Context<E>) => Promise<void>} reset
 */

/**
 * The middleware's own option.
 * @template {Env} [E=any]
 * @typedef {object} OnLimitedOption
 * @property {(c: Context<E>, decision: CheckedDecision) => Response | undefined | Promise<Response | undefined>} [onLimited]
 *   Builds the response to a denied request (undefined: the default 429); rate-limit headers are added to it.
 */

/**
 * The middleware's options: key, cost and skip functions receive the context.
 * @template {Env} [E=any]
 * @typedef {CommonOptions<[c: Context<E>]> & OnLimitedOption<E>} RateLimitOptions
 */

/**
 * rateLimit returns a Hono middleware limiting the requests it sees. Options are validated here; an
 * invalid one throws a SluiceConfigError naming it. The decision is c.get("rateLimit").
 *
 * The parameter spells RateLimitOptions<E> out: through the alias, TypeScript infers the context of
 * user((c) => ...) in `key` as Context<never>, and refuses it.
 * @template {Env} [E=any]
 * @param {CommonOptions<[c: Context<E>]> & OnLimitedOption<E>} options
 * @returns {MiddlewareHandler<E> & RateLimitHandle<E>}
 */
export function rateLimit(options) {
  const { settings, evaluate, get, reset } = createEngine(options, "hono");
  const { onLimited } = settings;
  /** @type {MiddlewareHandler<E>} */
  const middleware = async function rateLimit(c, next) {

    const decision = await evaluate([c], c.env, executionContextOf(c));
    if (decision.skipped) return next();
    c.set("rateLimit", decision);
    const headers = responseHeaders(decision, settings);
    if (!decision.allowed) {
      const custom = onLimited === undefined ? undefined : await onLimited(c, decision);
      if (custom === undefined) return limitedResponse(decision, settings);
      // A denial is about this client at this moment: no cache may replay it, unless onLimited says so.
      return withHeaders(custom, custom.headers.has("cache-control") ? headers : [...headers, ["cache-control", "no-store"]]);
    }
    await next();
    // A decision other than ours means a limiter further in (a stricter one on this route) has headed
    // the response, or denied it: stack our fields on its own.
    const response = withHeaders(c.res, headers, c.get("rateLimit") !== decision);
    if (response !== c.res) c.res = response;
  };
  /** @type {RateLimitHandle<E>} */
  const handle = {
    peek: (c) => evaluate([c], c.env, executionContextOf(c), true),
    get: (c) => get([c], c.env, executionContextOf(c)),
    reset: (c) => reset([c], c.env, executionContextOf(c)),
  };
  return Object.assign(middleware, handle);
}
