// The rate-limit verdict of one request on one route: every rule not in bypass is checked, and each
// rule's mode (see mode.js) says whether its denial blocks.
//
// The limiter is all-or-nothing: when any check denies, none is charged. That is right when the
// denying rule blocks, but a shadowed rule's denial must not stop the enforced rules from counting a
// request that goes through. So when every denial is non-blocking, the rules that admitted are
// checked — and charged — again without the shadowed ones. The common cases (all admit, or an
// enforced rule denies) cost one limiter call.

import { effectiveMode, isNearLimit, ruleEvent } from "./mode.js";

export class LimiterContractError extends Error {
  constructor(message) {
    super(message);
    this.name = "LimiterContractError";
  }
}

async function checkRules(limiterFor, ruleIndexes, request, env, ctx) {
  const outcome = await limiterFor(ruleIndexes).limit(request, env, ctx);
  if (!Array.isArray(outcome?.checks) || outcome.checks.length !== ruleIndexes.length) {
    throw new LimiterContractError(
      `the limiter answered ${outcome?.checks?.length ?? "no"} checks for ${ruleIndexes.length} rules`,
    );
  }
  return outcome;
}

// The outcome the rate-limit headers describe: every checked rule's decision, the request's real
// fate in `allowed`, and the top-level numbers from the blocking rule, else from the rule with the
// least remaining (a shadowed rule included: shadow mode shows what enforcing would say).
function mergedOutcome(checked, blocked) {
  let deciding = 0;
  for (let j = 0; j < checked.length; j++) {
    const { event, decision } = checked[j];
    if (blocked) {
      if (event === "denied") {
        deciding = j;
        break;
      }
    } else if (decision.remaining < checked[deciding].decision.remaining) {
      deciding = j;
    }
  }
  const { limit, remaining, resetMs, retryAfterMs } = checked[deciding].decision;
  return {
    allowed: !blocked,
    limit,
    remaining,
    resetMs,
    retryAfterMs,
    decidingCheck: deciding,
    checks: checked.map((verdict) => verdict.decision),
  };
}

/**
 * Checks `route`'s rules for `request`. `limiterFor(ruleIndexes)` gives the limiter of those rules of
 * the route (see gateway.js for the contract). Resolves to
 * { blocked, verdicts, checked, outcome, fallback } where verdicts has one entry per rule of the
 * route ({ rule, mode, key, decision, event, nearLimit }), checked lists the rules checked (in
 * order, with `outcome.checks` parallel to it; outcome is null when every rule is bypassed) and
 * fallback is the limiter's report of a degraded store, if any.
 */
export async function decide(route, limiterFor, request, env, ctx) {
  const verdicts = route.rules.map((rule) => ({
    rule,
    mode: "bypass",
    key: null,
    decision: null,
    event: "bypassed",
    nearLimit: false,
  }));
  const active = route.activeRuleIndexes;
  if (active.length === 0) return { blocked: false, verdicts, checked: [], outcome: null, fallback: null };

  const record = (ruleIndexes, outcome) => {
    ruleIndexes.forEach((index, j) => {
      const decision = outcome.checks[j];
      const verdict = verdicts[index];
      verdict.key = typeof decision.key === "string" ? decision.key : null;
      verdict.mode = effectiveMode(verdict.rule, verdict.key ?? undefined);
      verdict.decision = decision;
      verdict.event = ruleEvent(verdict.mode, decision);
      verdict.nearLimit = isNearLimit(decision);
    });
  };

  const first = await checkRules(limiterFor, active, request, env, ctx);
  record(active, first);
  let fallback = first.fallback ?? null;
  let blocked = active.some((index) => verdicts[index].event === "denied");
  if (!first.allowed && !blocked) {
    const admitted = active.filter((index) => verdicts[index].decision.allowed);
    if (admitted.length > 0) {
      const second = await checkRules(limiterFor, admitted, request, env, ctx);
      record(admitted, second);
      fallback ??= second.fallback ?? null;
      // Another request may have used the last unit between the two calls: an enforced rule denying
      // now blocks; a shadowed one denying now leaves this request admitted and uncharged.
      blocked = admitted.some((index) => verdicts[index].event === "denied");
    }
  }
  const checked = active.map((index) => verdicts[index]);
  return { blocked, verdicts, checked, outcome: mergedOutcome(checked, blocked), fallback };
}
