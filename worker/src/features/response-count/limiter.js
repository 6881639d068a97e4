// Counting on the response without a framework: createResponseLimiter is createLimiter for rules that
// count only some responses (options.js), in two steps around the handler, as createLockout is.
//
//   const limiter = createResponseLimiter({ key: ip(), limit: 5, windowSec: 60, countWhen: { status: [401] } });
//   const decision = await limiter.check(request, env, ctx);
//   if (!decision.allowed) return limiter.limitedResponse(decision);
//   const response = await handle(request);
//   return limiter.withHeaders(response, await limiter.settle(decision, response, request, env, ctx));
//
// check peeks; a refusal is then decided for real (counted; a blocking rule blocks the key). settle
// charges when the response matches and returns the decision the response's headers should carry.
import { SluiceConfigError } from "../../engine/errors.js";
import { createEngine, responseHeaders } from "../../engine/limiter.js";
import { withHeaders } from "../../http/headers.js";
import { limitedResponse } from "../../http/responses.js";
import { responseCounting } from "./options.js";
import { chargeAfter, withoutHeader } from "./hono.js";
import { leftAfterRefusal, peekCosts, unspent } from "./unspent.js";

/** @import { CommonOptions } from "../../engine/options.js" */
/** @import { ResponseCountOptions } from "./options.js" */

// A decision check() took, and whether it already counted the request (the refusal found room again).
const chargedByCheck = new WeakSet();
// The decisions settle() returned after charging the request.
const chargedBySettle = new WeakSet();

/**
 * createResponseLimiter validates `options` (as createLimiter, plus countWhen, skipSuccessfulRequests,
 * skipFailedRequests or costFrom: one of them is required) and returns its two steps.
 * @param {CommonOptions<[request: Request, env?: any, ctx?: any]> & ResponseCountOptions<[request: Request, env?: any, ctx?: any]>} options
 */
export function createResponseLimiter(options) {
  const { counts, cost, pendingCost, limiterOptions } = responseCounting(options);
  if (counts === null) {
    throw new SluiceConfigError("countWhen", "is missing: createResponseLimiter counts only the responses that match, or what they cost (costFrom); else use createLimiter");
  }
  const { settings, evaluate } = createEngine(limiterOptions, "fetch");
  const costs = peekCosts(settings, cost !== null);
  return Object.freeze({
    rules: settings.rules,
    /**
     * check is the decision before the handler: denied when the key has nothing left.
     * @param {Request} request @param {any} [env] @param {any} [ctx]
     */
    async check(request, env, ctx) {
      const args = [request, env, ctx];
      const peeked = await evaluate(args, env, ctx, true);
      if (peeked.allowed || peeked.skipped) return peeked;
      const decided = await evaluate(args, env, ctx);
      if (decided.allowed) chargedByCheck.add(decided);
      return decided;
    },
    /**
     * settle charges the request when `response` matches, and returns the decision its headers carry
     * (for a response that does not match, what is left after it: nothing was spent, unspent.js).
     * @param {any} decision what check returned @param {Response} response
     * @param {Request} request @param {any} [env] @param {any} [ctx]
     */
    async settle(decision, response, request, env, ctx) {
      if (!decision.allowed || decision.skipped || chargedByCheck.has(decision)) return decision;
      const args = [request, env, ctx];
      if (!(await counts(response, args))) return unspent(decision, costs);
      const after = await chargeAfter(evaluate, args, env, ctx, response, cost, pendingCost);
      if (!after.allowed) return leftAfterRefusal(after);
      chargedBySettle.add(after);
      return after;
    },
    /** Whether `settled` (what settle returned) charged the request. @param {any} settled */
    chargedBySettle(settled) {
      return chargedBySettle.has(settled);
    },
    /** @param {any} decision */
    headers(decision) {
      return responseHeaders(decision, settings);
    },
    /** withHeaders returns `response` with the decision's headers (and without costFrom's header). @param {Response} response @param {any} decision */
    withHeaders(response, decision) {
      const stripped = cost !== null && response.headers.has(cost.header) ? withoutHeader(response, cost.header) : response;
      return withHeaders(stripped, responseHeaders(decision, settings));
    },
    /** Whether check() charged the request already (a refusal that found room again): settle then charges nothing. @param {any} decision */
    chargedAtCheck(decision) {
      return chargedByCheck.has(decision);
    },
    /** With costFrom: how the responses' costs were read; else null. */
    costCounters: cost === null ? null : cost.counters,
    /** @param {any} decision */
    limitedResponse(decision) {
      return limitedResponse(decision, settings);
    },
  });
}
