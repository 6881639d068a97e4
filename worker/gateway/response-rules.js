// The rules of a route that count on the upstream's response (a rule's `countWhen` or `costFrom`):
// checked before the upstream call (a key with nothing left is refused, nothing is forwarded) and
// charged after its response, when the response matches (or with what it says it cost), as the
// library's createResponseLimiter does. Kept apart from the route's store groups (decide.js), as
// lockout rules are: their charge waits for the response.

import { withoutHeader } from "../src/features/response-count/hono.js";

/** @import { GatewayRoute } from "./config.js" */

/**
 * createResponseRules returns the two steps of `route`'s response-counting rules, or null when it has
 * none. `responseLimiter(rule, route)` builds a rule's createResponseLimiter (gateway/limiter.js).
 * @param {GatewayRoute} route
 * @param {((rule: any, route: GatewayRoute) => any) | undefined} responseLimiter
 */
export function createResponseRules(route, responseLimiter) {
  if (route.responseRuleIndexes.length === 0) return null;
  if (typeof responseLimiter !== "function") {
    throw new TypeError(`createGateway: ${route.prefix} has rules that count on the response (countWhen, costFrom); the limiterFactory has no responseLimiter(rule, route)`);
  }
  const limiters = route.responseRuleIndexes.map((i) => responseLimiter(route.rules[i], route));
  return {
    /**
     * check decides every rule before the upstream call: { refused } with the first refusing rule's
     * decision, else { decisions } to settle after the response.
     * @param {Request} request @param {any} env @param {any} ctx
     */
    async check(request, env, ctx) {
      const decisions = [];
      for (const limiter of limiters) {
        const decision = await limiter.check(request, env, ctx);
        if (!decision.allowed) return { refused: decision, decisions };
        decisions.push(decision);
      }
      return { refused: null, decisions };
    },
    /**
     * settle charges each rule for `response` and returns the response the client gets (without the
     * costFrom headers, which are the gateway's, not the client's).
     * @param {any[]} decisions @param {Response} response @param {Request} request @param {any} env @param {any} ctx
     */
    async settle(decisions, response, request, env, ctx) {
      let answer = response;
      for (let i = 0; i < limiters.length; i++) {
        await limiters[i].settle(decisions[i], response, request, env, ctx);
        const header = route.rules[route.responseRuleIndexes[i]].costFrom?.header;
        if (header !== undefined && answer.headers.has(header)) answer = withoutHeader(answer, header);
      }
      return answer;
    },
  };
}
