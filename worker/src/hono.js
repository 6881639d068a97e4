// sluice/hono: the rate-limit middleware for Hono.
//
//   app.use("/api/*", rateLimit({ key: ip(), limit: 120, windowSec: 60 }));
//
// A denied request gets a 429 (or what onLimited returns); an admitted one runs the handler, and its
// response carries the rate-limit headers. Either way the decision is c.get("rateLimit").
import { withHeaders } from "./http/headers.js";
import { createEngine, responseHeaders } from "./engine/limiter.js";
import { limitedResponse } from "./http/responses.js";
import { executionContextOf } from "./engine/execution-context.js";
import { middlewareHandle } from "./engine/middleware-handle.js";

import { user as keyOfUser } from "./http/keys.js";

export { apiKey, compose, firstOf, ip, route } from "./http/keys.js";
export { cf, cookie, query } from "./http/characteristics.js";
export { verifiedClaim } from "./http/jwt.js";
export { accessList } from "./features/lists/hono.js";
export { liveOverrides } from "./features/overrides/live.js";
export { overrideList } from "./features/overrides/overrides.js";
export { SluiceConfigError } from "./engine/errors.js";
export { accuracyProbe } from "./features/accuracy/probe.js";
export { lockout } from "./features/lockout/hono.js";
export { jsonField, normalizeAccount } from "./http/account.js";
export { concurrency } from "./features/concurrency/hono.js";
export { rateLimitOnResponse } from "./features/response-count/hono.js";

/** @import { Context, Env, MiddlewareHandler } from "hono" */
/** @import { CommonOptions } from "./engine/options.js" */
/** @import { KeyPart } from "./http/keys.js" */

// The types users of sluice/hono need, re-exported from the modules that define them.
/** @typedef {import("./features/concurrency/engine.js").ConcurrencyDecision} ConcurrencyDecision */
/** @template {unknown[]} [Args=any[]] @typedef {import("./features/concurrency/options.js").ConcurrencyCommonOptions<Args>} ConcurrencyOptions */
/** @typedef {import("./http/keys.js").IpOptions} IpOptions */
/** @template {unknown[]} [Args=any[]] @typedef {import("./http/keys.js").KeyFunction<Args>} KeyFunction */
/** @typedef {import("./http/keys.js").KeyHelper} KeyHelper */
/** @template {unknown[]} [Args=any[]] @typedef {import("./http/keys.js").KeySource<Args>} KeySource */
/** @typedef {import("./engine/limiter.js").BypassedDecision} BypassedDecision */
/** @typedef {import("./engine/limiter.js").CheckedDecision} CheckedDecision */
/** @typedef {import("./engine/limiter.js").RateLimitDecision} RateLimitDecision */
/** @typedef {import("./engine/options.js").HeaderMode} HeaderMode */
/** @typedef {import("./features/overrides/overrides.js").Override} Override */
/** @typedef {import("./features/overrides/overrides.js").OverrideList} OverrideList */
/** @typedef {import("./engine/options.js").LimitFunction} LimitFunction */
/** @template {unknown[]} [Args=any[]] @typedef {import("./engine/options.js").RuleOptions<Args>} RuleOptions */
/** @typedef {import("./engine/options.js").RuleQuota} RuleQuota */
/** @template {unknown[]} [Args=any[]] @typedef {import("./features/lockout/options.js").LockoutOptions<Args>} LockoutOptions */
/** @typedef {import("./features/lockout/lockout.js").LockoutAttempt} LockoutAttempt */

/**
 * user keys a request by the user id `identify` returns for its context (it may be async). No id
 * (undefined, null, "") gives no key part: combine with firstOf() to fall back to another key.
 * `identify` receives Hono's context: Context<E> for rateLimit<E>(...), else Context<Env>, whose
 * c.get() reads ContextVariableMap (docs/typescript.md).
 * @template {Env} [E=Env]
 * @param {(c: Context<E>) => KeyPart | Promise<KeyPart>} identify
 * @returns {KeyFunction<[c: Context<E>]>}
 */
export function user(identify) {
  return keyOfUser(identify);
}

/**
 * The decision the middleware sets as c.get("rateLimit"): a checked request, or one the dev bypass let
 * through. c.get("rateLimit") is undefined where the middleware did not set one (`skip` let the request
 * through, or the route has no rate-limit middleware), so its type is `MiddlewareDecision | undefined`.
 * @typedef {CheckedDecision | BypassedDecision} MiddlewareDecision
 */

/**
 * What the function rateLimit returns carries besides being a middleware: the limiter's peek, get and
 * reset, given a context, for tests and admin routes (engine/middleware-handle.js).
 * @template {Env} [E=Env]
 * @typedef {import("./engine/middleware-handle.js").RateLimitHandle<E>} RateLimitHandle
 */

/**
 * The middleware's own option.
 * @template {Env} [E=Env]
 * @typedef {object} OnLimitedOption
 * @property {(c: Context<E>, decision: CheckedDecision) => Response | undefined | Promise<Response | undefined>} [onLimited]
 *   Builds the response to a denied request (undefined: the default 429); rate-limit headers are added to it.
 */

/**
 * The middleware's options: key, cost and skip functions receive the context. (Counting on the
 * response is rateLimitOnResponse's, with RateLimitOnResponseOptions.)
 * @template {Env} [E=Env]
 * @typedef {CommonOptions<[c: Context<E>]> & OnLimitedOption<E>} RateLimitOptions
 */
/**
 * rateLimitOnResponse's options: rateLimit's, with countWhen, skipSuccessfulRequests, skipFailedRequests or costFrom.
 * @template {Env} [E=Env]
 * @typedef {import("./features/response-count/hono.js").RateLimitOnResponseOptions<E>} RateLimitOnResponseOptions
 */

/**
 * rateLimit returns a Hono middleware limiting the requests it sees. Options are validated here; an
 * invalid one throws a SluiceConfigError naming it. The decision is c.get("rateLimit").
 *
 * The parameter spells RateLimitOptions<E> out: through the alias, TypeScript infers the context of
 * user((c) => ...) in `key` as Context<never>, and refuses it.
 * Every request counts, before the handler. To count only the responses that match (countWhen,
 * skipSuccessfulRequests, skipFailedRequests) or what the response says it cost (costFrom), use
 * rateLimitOnResponse: rateLimit refuses those options, naming it, so that an app that does not count
 * on the response does not bundle that code.
 * @template {Env} [E=Env]
 * @param {CommonOptions<[c: Context<E>]> & OnLimitedOption<E>} options
 * @returns {MiddlewareHandler<E> & RateLimitHandle<E>}
 */
export function rateLimit(options) {
  const engine = createEngine(options, "hono");
  const { settings, evaluate } = engine;
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
  const handle = middlewareHandle(engine, null);
  return Object.assign(middleware, handle);
}
