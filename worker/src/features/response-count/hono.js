// The rate-limit middleware's flow when a rule counts on the response (options.js): checked before
// the handler, charged after it, as lockout does.
//
// Before: a peek. A key with nothing left is refused (429) and the handler does not run; that refusal
// is then decided for real, so that it is counted and a blocking rule's denial blocks the key (were
// the key to be admitted by then, its window having turned, this request is the one counted). After:
// a charge, only when the response matches.
//
// What it does not bound: requests in flight at the same moment are all judged on the count before
// them, so up to limit + (requests in flight at once) matching responses can be produced in a window;
// the charges beyond the limit are denied (a blocking rule then blocks the key). Sequential requests,
// across isolates on the durable store, are exact.
import { SluiceConfigError } from "../../engine/errors.js";
import { withHeaders } from "../../http/headers.js";
import { createEngine, responseHeaders } from "../../engine/limiter.js";
import { limitedResponse } from "../../http/responses.js";
import { executionContextOf } from "../../engine/execution-context.js";
import { middlewareHandle } from "../../engine/middleware-handle.js";
import { responseCounting } from "./options.js";
import { leftAfterRefusal, peekCosts, unspent } from "./unspent.js";

/** @import { Context, Env, MiddlewareHandler } from "hono" */
/** @import { CommonOptions } from "../../engine/options.js" */
/** @import { RateLimitHandle } from "../../engine/middleware-handle.js" */
/** @import { OnLimitedOption } from "../../hono.js" */
/** @import { ResponseCountOptions } from "./options.js" */

/**
 * rateLimitOnResponse's options: rateLimit's, with countWhen, skipSuccessfulRequests, skipFailedRequests
 * or costFrom (one of them is required).
 * @template {Env} [E=Env]
 * @typedef {CommonOptions<[c: Context<E>]> & OnLimitedOption<E> & ResponseCountOptions<[c: Context<E>]>} RateLimitOnResponseOptions
 */

/**
 * rateLimitOnResponse is rateLimit for rules that count only the responses that match (countWhen,
 * skipSuccessfulRequests, skipFailedRequests) or charge what the response says the request cost
 * (costFrom): checked before the handler, charged after it. Options are validated here; an invalid one
 * throws a SluiceConfigError naming it. The decision is c.get("rateLimit").
 *
 *   app.post("/login", rateLimitOnResponse({ key: ip(), limit: 5, windowSec: 600, countWhen: { status: [401] } }), login);
 * @template {Env} [E=Env]
 * @param {CommonOptions<[c: Context<E>]> & OnLimitedOption<E> & ResponseCountOptions<[c: Context<E>]>} options
 * @returns {MiddlewareHandler<E> & RateLimitHandle<E>}
 */
export function rateLimitOnResponse(options) {
  const { counts, cost, pendingCost, limiterOptions } = responseCounting(options);
  if (counts === null) {
    throw new SluiceConfigError("countWhen", "is missing: rateLimitOnResponse counts only the responses that match, or what they cost (costFrom); else use rateLimit");
  }
  const engine = createEngine(limiterOptions, "hono");
  /** @type {MiddlewareHandler<E>} */
  const middleware = countingMiddleware({ settings: engine.settings, evaluate: engine.evaluate, counts, cost, pendingCost });
  /** @type {RateLimitHandle<E>} */
  const handle = middlewareHandle(engine, cost === null ? null : cost.counters);
  return Object.assign(middleware, handle);
}

/**
 * countingMiddleware is rateLimitOnResponse's middleware.
 * @param {{ settings: any, evaluate: (args: readonly unknown[], env: any, ctx: any, peek?: boolean) => Promise<any>, counts: (response: Response, args: unknown[]) => boolean | Promise<boolean>, cost: null | ReturnType<typeof import("./cost.js").normalizeCostFrom>, pendingCost: WeakMap<object, number> }} engine
 * @returns {MiddlewareHandler}
 */
export function countingMiddleware({ settings, evaluate, counts, cost, pendingCost }) {
  const { onLimited } = settings;
  const costs = peekCosts(settings, cost !== null);
  return async function rateLimitOnResponse(c, next) {
    const args = [c];
    const ctx = executionContextOf(c);
    let decision = await evaluate(args, c.env, ctx, true);
    if (decision.skipped) return next();
    let charged = false;
    if (!decision.allowed) {
      decision = await evaluate(args, c.env, ctx);
      charged = decision.allowed;
    }
    c.set("rateLimit", decision);
    if (!decision.allowed) {
      const custom = onLimited === undefined ? undefined : await onLimited(c, decision);
      const headers = responseHeaders(decision, settings);
      if (custom === undefined) return limitedResponse(decision, settings);
      return withHeaders(custom, custom.headers.has("cache-control") ? headers : [...headers, ["cache-control", "no-store"]]);
    }
    await next();
    if (!charged && (await counts(c.res, args))) {
      const charge = await chargeAfter(evaluate, args, c.env, ctx, c.res, cost, pendingCost);
      // A charge refused here (requests in flight took the last units) charged nothing, and the
      // headers say what is left now (unspent.js).
      const after = charge.allowed ? charge : leftAfterRefusal(charge);
      if (c.get("rateLimit") === decision) c.set("rateLimit", after);
      decision = after;
    } else if (!charged) {
      // Not counted: nothing was spent, and the headers say what is left (unspent.js).
      const left = unspent(decision, costs);
      if (c.get("rateLimit") === decision) c.set("rateLimit", left);
      decision = left;
    }
    if (cost !== null && c.res.headers.has(cost.header)) {
      // In place when the headers are mutable: Hono's c.res setter copies the old response's headers back.
      try {
        c.res.headers.delete(cost.header);
      } catch {
        const stripped = withoutHeader(c.res, cost.header);
        c.res = undefined;
        c.res = stripped;
      }
    }
    const response = withHeaders(c.res, responseHeaders(decision, settings), c.get("rateLimit") !== decision);
    if (response !== c.res) c.res = response;
  };
}

/**
 * chargeAfter charges a request whose response counts: its cost from the response when costFrom is
 * set (cost.js), else the rules' own. A cost above what the key has left charges what it has (the core
 * cannot go below zero, and charges all or nothing), counted as exhausted.
 * @param {(args: readonly unknown[], env: any, ctx: any, peek?: boolean) => Promise<any>} evaluate
 * @param {unknown[]} args @param {any} env @param {any} ctx @param {Response} response
 * @param {null | ReturnType<typeof import("./cost.js").normalizeCostFrom>} cost
 * @param {WeakMap<object, number>} pendingCost
 */
export async function chargeAfter(evaluate, args, env, ctx, response, cost, pendingCost) {
  if (cost === null) return evaluate(args, env, ctx);
  const key = /** @type {object} */ (args[0]);
  pendingCost.set(key, cost.costOf(response));
  try {
    const after = await evaluate(args, env, ctx);
    if (after.allowed || !(after.remaining >= 1)) return after;
    cost.counters.exhausted++;
    pendingCost.set(key, after.remaining);
    return await evaluate(args, env, ctx);
  } finally {
    pendingCost.delete(key);
  }
}

/** withoutHeader is `response` without header `name` (the origin's cost is not the client's business). @param {Response} response @param {string} name @returns {Response} */
export function withoutHeader(response, name) {
  const headers = new Headers(response.headers);
  headers.delete(name);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}
