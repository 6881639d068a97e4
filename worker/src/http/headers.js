// The rate-limit header fields of a response:
//  - legacy: X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset (seconds until reset), from
//    the deciding rule (the denying one, or the one with least remaining);
//  - draft: RateLimit-Policy and RateLimit as draft-ietf-httpapi-ratelimit-headers-10 spells them,
//    one list member per rule: `"name";q=100;w=60` and `"name";r=42;t=17`;
//  - Retry-After on every denial that waiting can cure, whatever the mode;
//  - X-RateLimit-Fallback when the store that should have decided could not (any mode but "none"): who
//    decided instead ("kv", "memory"), or failMode's "open" or "closed". Nothing of why: a store's
//    error text stays in the logs.
// Values come only from decisions a store took: a rule no store consulted (a pre-filtered request's
// other rules, every rule when failMode decided) has no list member in RateLimit, and a request that
// failMode "open" admitted has no X-RateLimit-* counts, since nobody counted it.

/** @import { HeaderMode } from "../engine/options.js" */
/** @type {readonly HeaderMode[]} */
export const HEADER_MODES = Object.freeze(["legacy", "draft", "both", "none"]);
export const BYPASS_HEADER = "X-RateLimit-Bypassed";
export const FALLBACK_HEADER = "X-RateLimit-Fallback";

/** secondsUntil rounds a delay in milliseconds up to whole seconds: never earlier than the truth. */
export function secondsUntil(ms) {
  return Math.ceil(ms / 1000);
}

// A quota policy item. A bucket admits `capacity` at once and refills it in windowMs * capacity / limit,
// so q/w states both its burst and its sustained rate; for windows that is simply limit per window.
// The draft wants w in whole seconds, at least 1.
function policyItem(rule) {
  const capacity = rule.burst > 0 ? rule.burst : rule.limit;
  const windowMs = (rule.windowMs * capacity) / rule.limit;
  return `"${rule.name}";q=${capacity};w=${Math.max(1, secondsUntil(windowMs))}`;
}

/**
 * policyHeader is the RateLimit-Policy value for `rules`; it never changes, so build it once.
 * @param {readonly import("../stores/store.js").NormalizedRule[]} rules
 * @returns {string}
 */
export function policyHeader(rules) {
  return rules.map(policyItem).join(", ");
}

// A service limit item. t is when more quota is available: for a denied rule, when this request would
// be admitted (so Retry-After, the longest of those, is never earlier than any t); otherwise when the
// rule is back to its full quota. A denial no wait can cure (a cost above capacity) has no t.
function serviceLimitItem(rule, decision) {
  const untilMs = decision.allowed ? decision.resetMs : decision.retryAfterMs;
  const t = Number.isFinite(untilMs) ? `;t=${secondsUntil(untilMs)}` : "";
  return `"${rule.name}";r=${decision.remaining}${t}`;
}

/**
 * retryAfterSeconds is a denied decision's Retry-After in whole seconds (rounded up, at least 1), or
 * null when no amount of waiting admits the request.
 */
export function retryAfterSeconds(decision) {
  if (!Number.isFinite(decision.retryAfterMs)) return null;
  return Math.max(1, secondsUntil(decision.retryAfterMs));
}

/**
 * decisionHeaders lists the [name, value] pairs a response to a checked request carries in `mode`,
 * given the precomputed `policy` (policyHeader of the same rules).
 * @param {any} decision
 * @param {HeaderMode} mode
 * @param {string} policy
 * @returns {Array<[string, string]>}
 */
export function decisionHeaders(decision, mode, policy) {
  const pairs = [];
  const counted = !(decision.allowed && decision.store === "none");
  if ((mode === "legacy" || mode === "both") && counted) {
    pairs.push(
      ["X-RateLimit-Limit", String(decision.limit)],
      ["X-RateLimit-Remaining", String(decision.remaining)],
      ["X-RateLimit-Reset", String(secondsUntil(decision.resetMs))],
    );
  }
  if (mode === "draft" || mode === "both") {
    const rules = decision.rules;
    let limits = "";
    for (let i = 0; i < rules.length; i++) {
      const check = decision.checks[i];
      if (check !== null) limits += (limits === "" ? "" : ", ") + serviceLimitItem(rules[i], check);
    }
    pairs.push(["RateLimit-Policy", policy]);
    if (limits !== "") pairs.push(["RateLimit", limits]);
  }
  if (decision.fallback !== undefined && mode !== "none") {
    pairs.push([FALLBACK_HEADER, decision.store === "none" ? (decision.allowed ? "open" : "closed") : String(decision.store)]);
  }
  if (!decision.allowed) {
    const retryAfter = retryAfterSeconds(decision);
    if (retryAfter !== null) pairs.push(["Retry-After", String(retryAfter)]);
  }
  return pairs;
}

/**
 * bypassHeaders lists the pairs of a response whose limiting was bypassed by the environment.
 * @param {any} bypass
 * @returns {Array<[string, string]>}
 */
export function bypassHeaders(bypass) {
  return [[BYPASS_HEADER, `${bypass.variable}=${bypass.value}`]];
}

// When a second limiter heads a response another limiter of the same request already headed (an
// outer middleware, after an inner one on the same route), its fields stack on the first's instead
// of replacing them: RateLimit-Policy and RateLimit are lists, so they gain this limiter's members;
// the X-RateLimit-* trio can name one limit only, so it stays the one with less remaining (on a tie,
// the inner one, which is the one that denied if any did).
const LIST_FIELDS = new Set(["ratelimit-policy", "ratelimit"]);
const LEGACY_FIELDS = new Set(["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]);

function remainingIn(pairs) {
  const pair = pairs.find(([name]) => name.toLowerCase() === "x-ratelimit-remaining");
  return pair === undefined ? null : Number(pair[1]);
}

function setPairs(headers, pairs, stacking) {
  const before = stacking ? headers.get("x-ratelimit-remaining") : null;
  const ours = remainingIn(pairs);
  const keepLegacy = before !== null && ours !== null && Number(before) <= ours;
  for (const [name, value] of pairs) {
    const field = name.toLowerCase();
    if (stacking && LIST_FIELDS.has(field) && headers.has(field)) headers.set(name, `${headers.get(field)}, ${value}`);
    else if (!(keepLegacy && LEGACY_FIELDS.has(field))) headers.set(name, value);
  }
}

/**
 * withHeaders sets `pairs` on `response` and returns it; a response with immutable headers (one
 * passed through from fetch) is copied first. With `stacking` (another limiter of this request
 * headed the response already), the fields stack on that limiter's (see above).
 * @param {Response} response
 * @param {ReadonlyArray<readonly [string, string]>} pairs
 * @param {boolean} [stacking]
 * @returns {Response}
 */
export function withHeaders(response, pairs, stacking = false) {
  if (pairs.length === 0) return response;
  try {
    setPairs(response.headers, pairs, stacking);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    setPairs(copy.headers, pairs, stacking);
    return copy;
  }
}
