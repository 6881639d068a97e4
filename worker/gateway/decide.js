// The rate-limit verdict of one request on one route: every rule not in bypass is checked, and each
// rule's mode (see mode.js) says whether its denial blocks.
//
// Rules are checked store by store (route.storeGroups: memory, then kv, then durable), each store's
// rules in one all-or-nothing limiter call. A store's denial that blocks ends the request: the stores
// after it are not asked (their rules are "unchecked"), and the stores before it keep their charge,
// as stacked middlewares do.
//
// Within a store the limiter is all-or-nothing: when any check denies, none is charged. That is right
// when the denying rule blocks, but a shadowed rule's denial must not stop the enforced rules from
// counting a request that goes through. So when every denial is non-blocking, the other rules are
// checked — and charged — again without the denying ones. The common cases (all admit, or an
// enforced rule denies) cost one limiter call per store.
//
// A check no store consulted (the host's fallback chain answered from failMode, or from its memory of
// an earlier denial: checks[i] null) is "unchecked", except that a denial no store consulted is the
// deciding rule's: failMode "closed" refuses under that rule's policy, as the host's 429 says.

import { effectiveMode, isNearLimit, ruleEvent } from "../src/engine/mode.js";

/** @import { Decision } from "../../wasm-bindings/sluice.js" */
/** @import { CheckedDecision } from "../src/engine/limiter.js" */
/** @import { Mode } from "../src/engine/mode.js" */
/** @import { NormalizedRule, Outcome } from "../src/stores/store.js" */
/** @import { GatewayRoute, GatewayRule } from "./config.js" */
/** @import { GatewayLimiter } from "./gateway.js" */

/** The limiter of some rules of a route (by index), all of one store. @typedef {(ruleIndexes: readonly number[]) => GatewayLimiter} LimiterFor */
/**
 * One rule's verdict for a request: its effective mode and key, the store's decision (`check`, null
 * when no store consulted it), what the verdict stands on (`decision`), the event it logs, and which
 * store decided; a rule that counts on the response (countWhen, costFrom) also says whether the
 * response was charged (`charged`, once settled).
 * @typedef {{
 *   rule: GatewayRule, mode: Mode, key: string | null, check: Decision | null, decision: Decision | null,
 *   event: "bypassed" | "unchecked" | "admitted" | "denied" | "would_have_denied", nearLimit: boolean,
 *   fallback: boolean, store: Outcome["store"] | null, charged?: boolean,
 * }} RuleVerdict
 */
/**
 * The outcome the rate-limit headers and a 429 describe (mergedOutcome), in the host's decision shape.
 * @typedef {Outcome & { rules: NormalizedRule[], keys: Array<string | null> }} MergedOutcome
 */
/**
 * What decide answers: whether the request is blocked, one verdict per rule of the route, the
 * verdicts of the stores that were asked (`checked`), their merged outcome (null when none was), and
 * the dev bypass's headers when it let the request through unchecked.
 * @typedef {{ blocked: boolean, verdicts: RuleVerdict[], checked: RuleVerdict[], outcome: MergedOutcome | null, bypassHeaders: Array<[string, string]> | null }} RouteVerdict
 */

export class LimiterContractError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "LimiterContractError";
  }
}

/** @param {LimiterFor} limiterFor @param {readonly number[]} ruleIndexes @param {Request} request @param {unknown} env @param {unknown} ctx @returns {Promise<{ bypassHeaders: Array<[string, string]>, outcome?: undefined } | { outcome: CheckedDecision, bypassHeaders?: undefined }>} */
async function checkRules(limiterFor, ruleIndexes, request, env, ctx) {
  const limiter = limiterFor(ruleIndexes);
  const outcome = await limiter.limit(request, env, ctx);
  // The Worker's dev bypass (ENV=dev): nothing was checked, and the limiter says so in its headers.
  if (outcome?.bypassed === true) return { bypassHeaders: limiter.headers?.(outcome) ?? [] };
  if (!Array.isArray(outcome?.checks) || outcome.checks.length !== ruleIndexes.length) {
    throw new LimiterContractError(
      `the limiter answered ${outcome?.checks?.length ?? "no"} checks for ${ruleIndexes.length} rules`,
    );
  }
  return { outcome };
}

/** @param {GatewayRule} rule @returns {RuleVerdict} */
function newVerdict(rule) {
  return {
    rule,
    mode: "bypass",
    key: null,
    // The store's own decision for the rule, null when no store consulted it.
    check: null,
    // What the verdict stands on: `check`, or the outcome of a denial no store consulted.
    decision: null,
    event: "bypassed",
    nearLimit: false,
    // Whether a fallback store decided (the configured one failed).
    fallback: false,
    // Which store decided ("memory", "durable", "kv", or "none" when failMode did).
    store: null,
  };
}

/** @param {Decision} decision @returns {Decision} */
function denialOf({ limit, remaining, resetMs, retryAfterMs }) {
  return { allowed: false, limit, remaining, resetMs, retryAfterMs };
}

/** @param {RuleVerdict[]} verdicts @param {readonly number[]} ruleIndexes @param {CheckedDecision} outcome */
function record(verdicts, ruleIndexes, outcome) {
  const fallback = outcome.fallback !== undefined && outcome.fallback !== null;
  for (let j = 0; j < ruleIndexes.length; j++) {
    const verdict = verdicts[ruleIndexes[j]];
    const check = outcome.checks[j] ?? null;
    const key = outcome.keys?.[j];
    verdict.key = typeof key === "string" ? key : null;
    verdict.mode = effectiveMode(verdict.rule, verdict.key ?? undefined);
    verdict.check = check;
    verdict.decision = check === null && !outcome.allowed && j === outcome.decidingCheck ? denialOf(outcome) : check;
    verdict.event = verdict.decision === null ? "unchecked" : ruleEvent(verdict.mode, verdict.decision);
    verdict.nearLimit = verdict.decision !== null && isNearLimit(verdict.decision);
    verdict.fallback = fallback;
    verdict.store = outcome.store ?? null;
  }
}

// The outcome the rate-limit headers and a 429 describe, in the host's decision shape: every checked
// rule's store decision (`checks`, with `rules` and `keys` parallel to it), the request's real fate in
// `allowed`, and the top-level numbers from the blocking rule, else from the rule with the least
// remaining (a shadowed rule included: shadow mode shows what enforcing would say).
/** @param {readonly RuleVerdict[]} checked @param {boolean} blocked @returns {MergedOutcome} */
function mergedOutcome(checked, blocked) {
  let deciding = -1;
  for (let j = 0; j < checked.length; j++) {
    const { event, decision } = checked[j];
    if (decision === null) continue;
    if (blocked) {
      if (event === "denied") {
        deciding = j;
        break;
      }
    } else if (deciding < 0 || decision.remaining < /** @type {Decision} */ (checked[deciding].decision).remaining) {
      deciding = j;
    }
  }
  // `deciding` points only at a verdict with a decision.
  const top = deciding < 0 ? null : /** @type {RuleVerdict & { decision: Decision }} */ (checked[deciding]);
  return {
    allowed: !blocked,
    limit: top?.decision.limit ?? 0,
    remaining: top?.decision.remaining ?? 0,
    resetMs: top?.decision.resetMs ?? 0,
    retryAfterMs: top?.decision.retryAfterMs ?? 0,
    decidingCheck: Math.max(0, deciding),
    // "none" when no rule was counted (failMode "open" admitted): the headers then show no counts.
    store: top?.store ?? "none",
    rules: checked.map((verdict) => verdict.rule),
    checks: checked.map((verdict) => verdict.check),
    keys: checked.map((verdict) => verdict.key),
  };
}

// A request no store checked: every rule in bypass mode, or the Worker's dev bypass (`bypassHeaders`).
/** @param {RuleVerdict[]} verdicts @param {Array<[string, string]> | null} bypassHeaders @returns {RouteVerdict} */
function unchecked(verdicts, bypassHeaders) {
  return { blocked: false, verdicts, checked: [], outcome: null, bypassHeaders };
}

/**
 * Checks `route`'s rules for `request`. `limiterFor(ruleIndexes)` gives the limiter of those rules of
 * the route, all of one store (see gateway.js for the contract). Resolves to
 * { blocked, verdicts, checked, outcome, bypassHeaders } where verdicts has one entry per rule of the
 * route ({ rule, mode, key, check, decision, event, nearLimit, fallback, store }), checked lists the
 * rules of the stores that were asked (in route order, parallel to outcome.rules and outcome.checks;
 * outcome is null when none was), and bypassHeaders is set when the Worker's dev bypass let the
 * request through unchecked.
 * @param {GatewayRoute} route
 * @param {LimiterFor} limiterFor
 * @param {Request} request
 * @param {unknown} env
 * @param {unknown} ctx
 * @returns {Promise<RouteVerdict>}
 */
export async function decide(route, limiterFor, request, env, ctx) {
  const verdicts = route.rules.map(newVerdict);
  const asked = [];
  let blocked = false;
  for (const group of route.storeGroups) {
    if (blocked) {
      for (const index of group) {
        verdicts[index].mode = verdicts[index].rule.mode;
        verdicts[index].event = "unchecked";
      }
      continue;
    }
    const first = await checkRules(limiterFor, group, request, env, ctx);
    if (first.bypassHeaders !== undefined) return unchecked(verdicts, first.bypassHeaders);
    record(verdicts, group, first.outcome);
    asked.push(...group);
    blocked = group.some((index) => verdicts[index].event === "denied");
    if (!first.outcome.allowed && !blocked) {
      const retry = group.filter((index) => verdicts[index].event !== "would_have_denied");
      if (retry.length > 0) {
        const second = await checkRules(limiterFor, retry, request, env, ctx);
        if (second.bypassHeaders !== undefined) return unchecked(verdicts, second.bypassHeaders);
        record(verdicts, retry, second.outcome);
        // Another request may have used the last unit between the two calls: an enforced rule
        // denying now blocks; a shadowed one denying now leaves this request admitted and uncharged.
        blocked = retry.some((index) => verdicts[index].event === "denied");
      }
    }
  }
  if (asked.length === 0) return unchecked(verdicts, null);
  const checked = asked.sort((a, b) => a - b).map((index) => verdicts[index]);
  return { blocked, verdicts, checked, outcome: mergedOutcome(checked, blocked), bypassHeaders: null };
}

/**
 * withResponseRules adds the verdicts of `route`'s rules that count on the response (response-rules.js)
 * to `verdict` (which did not block): `decisions` are their checks' decisions in order, up to the one
 * that refused, `refused` (null when all admitted). The request is then blocked when one refused, and
 * the merged outcome (the rate-limit headers, a 429) covers them as it covers the route's other rules.
 * @param {GatewayRoute} route @param {RouteVerdict} verdict
 * @param {readonly CheckedDecision[]} decisions @param {CheckedDecision | null} refused
 * @returns {RouteVerdict}
 */
export function withResponseRules(route, verdict, decisions, refused) {
  const answered = refused === null ? decisions : [...decisions, refused];
  answered.forEach((decision, k) => record(verdict.verdicts, [route.responseRuleIndexes[k]], decision));
  const blocked = verdict.blocked || answered.some((_, k) => verdict.verdicts[route.responseRuleIndexes[k]].event === "denied");
  const asked = new Set([...verdict.checked.map((ruleVerdict) => verdict.verdicts.indexOf(ruleVerdict)), ...route.responseRuleIndexes.slice(0, answered.length)]);
  const checked = [...asked].sort((a, b) => a - b).map((index) => verdict.verdicts[index]);
  return { ...verdict, blocked, checked, outcome: mergedOutcome(checked, blocked) };
}

/**
 * settledResponseRules records what settling the response did to the response rules' verdicts: each
 * rule's decision after its charge (`settled`, in order) and whether it charged, and returns the
 * merged outcome the response's rate-limit headers now describe.
 * @param {GatewayRoute} route @param {RouteVerdict} verdict
 * @param {ReadonlyArray<{ decision: CheckedDecision, charged: boolean }>} settled
 * @returns {MergedOutcome}
 */
export function settledResponseRules(route, verdict, settled) {
  settled.forEach(({ decision, charged }, k) => {
    const index = route.responseRuleIndexes[k];
    // Charged or not, `decision` says what the rule has left after the response (createResponseLimiter).
    record(verdict.verdicts, [index], decision);
    verdict.verdicts[index].charged = charged;
  });
  return mergedOutcome(verdict.checked, verdict.blocked);
}
