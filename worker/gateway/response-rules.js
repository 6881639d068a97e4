// The rules of a route that count on the upstream's response (a rule's `countWhen` or `costFrom`):
// checked before the upstream call (a key with nothing left is refused, nothing is forwarded) and
// charged after its response, when the response matches (or with what it says it cost), as the
// library's createResponseLimiter does. Kept apart from the route's store groups (decide.js), as
// lockout rules are: their charge waits for the response. Their verdicts join the route's
// (decide.js's withResponseRules), so they are counted, logged and in the rate-limit headers as the
// route's other rules are; what settling did is counted here (families()).

import { withoutHeader } from "../src/features/response-count/hono.js";

/** @import { GatewayConfig, GatewayRoute } from "./config.js" */

// How a costFrom rule read its responses' costs (the library's CostCounters), as /metrics labels them.
const COST_SOURCES = /** @type {const} */ ([
  ["header", "fromHeader"],
  ["clamped", "clamped"],
  ["missing", "missing"],
  ["invalid", "invalid"],
  ["exhausted", "exhausted"],
]);

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
  // Per rule, in this isolate: admitted requests whose response was charged, and those it was not.
  const counters = limiters.map(() => ({ charged: 0, notCounted: 0 }));
  return {
    route,
    limiters,
    counters,
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
     * costFrom headers, which are the gateway's, not the client's) and, per rule, its decision after
     * the charge and whether the request was charged.
     * @param {any[]} decisions @param {Response} response @param {Request} request @param {any} env @param {any} ctx
     */
    async settle(decisions, response, request, env, ctx) {
      let answer = response;
      const settled = [];
      for (let i = 0; i < limiters.length; i++) {
        const after = await limiters[i].settle(decisions[i], response, request, env, ctx);
        // A refusal that found room again at check was charged then (createResponseLimiter).
        const charged = limiters[i].chargedBySettle(after) || limiters[i].chargedAtCheck?.(decisions[i]) === true;
        counters[i][charged ? "charged" : "notCounted"]++;
        settled.push({ decision: after, charged });
        const header = route.rules[route.responseRuleIndexes[i]].costFrom?.header;
        if (header !== undefined && answer.headers.has(header)) answer = withoutHeader(answer, header);
      }
      return { response: answer, settled };
    },
  };
}

/**
 * The /metrics families of every route's response-counting rules (`all`: createResponseRules' answers,
 * null for a route without such rules).
 * @param {ReadonlyArray<ReturnType<typeof createResponseRules>>} all
 * @returns {import("./metrics.js").MetricFamily[]}
 */
export function responseRuleFamilies(all) {
  const present = /** @type {NonNullable<ReturnType<typeof createResponseRules>>[]} */ (all.filter((rules) => rules !== null));
  if (present.length === 0) return [];
  /** @param {NonNullable<ReturnType<typeof createResponseRules>>} rules @param {number} i */
  const labels = (rules, i) => ({ route: rules.route.prefix, rule: rules.route.rules[rules.route.responseRuleIndexes[i]].name });
  /** @param {"charged" | "notCounted"} field */
  const settledSamples = (field) => present.flatMap((rules) => rules.counters.map((counts, i) => ({ labels: labels(rules, i), value: counts[field] })));
  return [
    {
      name: "sluice_response_rule_charged_total",
      help: "Admitted requests of a rule that counts on the response (countWhen, costFrom) whose response was charged.",
      type: "counter",
      samples: settledSamples("charged"),
    },
    {
      name: "sluice_response_rule_not_counted_total",
      help: "Admitted requests of a rule that counts on the response whose response was not charged: it did not match countWhen, or requests in flight had taken the key's last units.",
      type: "counter",
      samples: settledSamples("notCounted"),
    },
    {
      name: "sluice_cost_from_total",
      help: "Responses of a costFrom rule, by how their cost was read: header (as given), clamped (above max: charged max), missing or invalid (charged the rule's default), exhausted (above what the key had left: charged what it had).",
      type: "counter",
      samples: present.flatMap((rules) =>
        rules.limiters.flatMap((limiter, i) =>
          limiter.costCounters === null || limiter.costCounters === undefined ? [] : COST_SOURCES.map(([source, field]) => ({ labels: { ...labels(rules, i), source }, value: limiter.costCounters[field] })),
        ),
      ),
    },
  ];
}
