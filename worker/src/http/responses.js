// The 429 response of a denied request: the rate-limit headers, Retry-After, `cache-control: no-store`
// (a denial is about this client at this moment; no cache may replay it to anyone), and a JSON body,
// or with `problemJson` an RFC 9457 problem of the draft's "quota-exceeded" type naming the violated
// policies.
import { decisionHeaders, retryAfterSeconds, secondsUntil } from "./headers.js";

/** @import { HeaderMode } from "../engine/options.js" */
/** @import { NormalizedRule, Outcome } from "../stores/store.js" */

/**
 * A denied decision as a 429 reads it: the store's outcome with the rules it checked (a limiter's
 * CheckedDecision, or the gateway's).
 * @typedef {Outcome & { readonly rules: readonly NormalizedRule[] }} DeniedDecision
 */
/**
 * How a limiter shapes its 429s (a subset of its LimiterSettings, or the gateway's).
 * @typedef {object} LimitedResponseSettings
 * @property {string | number} code
 * @property {boolean} problemJson
 * @property {HeaderMode} headers
 * @property {string} policy
 * @property {string} [legacyReset]
 * @property {() => number} [clock]
 */

const QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/**
 * violatedPolicies names the rules whose own check denied the request; when no store consulted them
 * (failMode "closed" denied), the deciding rule, under whose policy the request was refused.
 * @param {DeniedDecision} decision
 * @returns {string[]}
 */
export function violatedPolicies(decision) {
  const names = [];
  for (let i = 0; i < decision.checks.length; i++) {
    const check = decision.checks[i];
    if (check !== null && !check.allowed) names.push(decision.rules[i].name);
  }
  if (names.length === 0) names.push(decision.rules[decision.decidingCheck].name);
  return names;
}

/**
 * limitedBody is the JSON body of a 429 for `decision`, as `settings` ({code, problemJson}) shape it.
 * @param {DeniedDecision} decision
 * @param {Pick<LimitedResponseSettings, "code" | "problemJson">} settings
 */
export function limitedBody(decision, settings) {
  const fields = {
    code: settings.code,
    retryAfter: retryAfterSeconds(decision),
    limit: decision.limit,
    remaining: decision.remaining,
    reset: secondsUntil(decision.resetMs),
  };
  if (!settings.problemJson) return { error: "too many requests", ...fields };
  return {
    type: QUOTA_EXCEEDED,
    title: "Request cannot be satisfied as assigned quota has been exceeded",
    status: 429,
    "violated-policies": violatedPolicies(decision),
    ...fields,
  };
}

/**
 * epochNow is the limiter's clock when its legacy X-RateLimit-Reset is a Unix time (legacyReset
 * "epoch"), else null (seconds from now).
 * @param {{ legacyReset?: string; clock?: () => number }} settings
 * @returns {number | null}
 */
export function epochNow(settings) {
  return settings.legacyReset === "epoch" && settings.clock !== undefined ? settings.clock() : null;
}

/** limitedResponse builds the 429 for a denied `decision`. @param {DeniedDecision} decision @param {LimitedResponseSettings} settings @returns {Response} */
export function limitedResponse(decision, settings) {
  // One record of fields for the constructor: setting them one by one afterwards costs a native call
  // each, and workerd converts a list of [name, value] pairs at about twice a record's cost per field
  // (8 fields: ~20 us as pairs, ~8 us as a record). decisionHeaders never names a field twice.
  /** @type {Record<string, string>} */
  const headers = { "content-type": settings.problemJson ? "application/problem+json" : "application/json", "cache-control": "no-store" };
  for (const [name, value] of decisionHeaders(decision, settings.headers, settings.policy, epochNow(settings))) headers[name] = value;
  return new Response(JSON.stringify(limitedBody(decision, settings)), { status: 429, headers });
}
