// The rate-limit header fields of a response:
//  - legacy: X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset (seconds until reset, or with
//    legacyReset "epoch" the Unix time in seconds, as GitHub and express-rate-limit send it), from the
//    deciding rule (the denying one, or the one with least remaining);
//  - draft (also "draft-8": drafts 8 to 10 of draft-ietf-httpapi-ratelimit-headers share this syntax):
//    RateLimit-Policy and RateLimit, one list member per rule: `"name";q=100;w=60` and `"name";r=42;t=17`;
//  - draft-6: RateLimit-Policy `100;w=60` (one item per rule), RateLimit-Limit, RateLimit-Remaining and
//    RateLimit-Reset (seconds) of the deciding rule;
//  - draft-7: RateLimit-Policy as draft-6, and RateLimit `limit=100, remaining=42, reset=17` of the
//    deciding rule;
//  - Retry-After on every denial that waiting can cure, whatever the mode;
//  - X-RateLimit-Fallback when the store that should have decided could not (any mode but "none"): who
//    decided instead ("kv", "memory"), or failMode's "open" or "closed". Nothing of why: a store's
//    error text stays in the logs.
// Every value is an integer or a rule name (printable ASCII without '"' or '\', checked when the rule
// is built), so the structured fields are written as plain text: a structured-fields library would add
// weight to every bundle and have nothing to escape.
// Values come only from decisions a store took: a rule no store consulted (a pre-filtered request's
// other rules, every rule when failMode decided) has no list member in RateLimit, and a request that
// failMode "open" admitted has no X-RateLimit-* counts, since nobody counted it.

/** @import { HeaderMode } from "../engine/options.js" */
/** @type {readonly HeaderMode[]} */
export const HEADER_MODES = Object.freeze(["legacy", "draft", "draft-6", "draft-7", "draft-8", "both", "none"]);
export const BYPASS_HEADER = "X-RateLimit-Bypassed";
export const FALLBACK_HEADER = "X-RateLimit-Fallback";

/** secondsUntil rounds a delay in milliseconds up to whole seconds: never earlier than the truth. @param {number} ms @returns {number} */
export function secondsUntil(ms) {
  return Math.ceil(ms / 1000);
}

// A rule's quota as the drafts state it. A bucket admits `capacity` at once and refills it in
// windowMs * capacity / limit, so q/w states both its burst and its sustained rate; for windows that is
// simply limit per window. The drafts want w in whole seconds, at least 1.
/** @param {import("../stores/store.js").NormalizedRule} rule @returns {string} */
function quotaOf(rule) {
  const capacity = rule.burst > 0 ? rule.burst : rule.limit;
  const windowMs = (rule.windowMs * capacity) / rule.limit;
  return `${capacity};w=${Math.max(1, secondsUntil(windowMs))}`;
}

// A quota policy item (draft 8 on): named.
/** @param {import("../stores/store.js").NormalizedRule} rule @returns {string} */
function policyItem(rule) {
  return `"${rule.name}";q=${quotaOf(rule)}`;
}

// A quota policy item as drafts 6 and 7 spell it: the quota as an integer item, unnamed.
/** @param {import("../stores/store.js").NormalizedRule} rule @returns {string} */
function unnamedPolicyItem(rule) {
  return quotaOf(rule);
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
/** @param {import("../stores/store.js").NormalizedRule} rule @param {import("../../../wasm-bindings/sluice.js").Decision} decision @returns {string} */
function serviceLimitItem(rule, decision) {
  const untilMs = decision.allowed ? decision.resetMs : decision.retryAfterMs;
  const t = Number.isFinite(untilMs) ? `;t=${secondsUntil(untilMs)}` : "";
  return `"${rule.name}";r=${decision.remaining}${t}`;
}

/**
 * retryAfterSeconds is a denied decision's Retry-After in whole seconds (rounded up, at least 1), or
 * null when no amount of waiting admits the request.
 * @param {{ readonly retryAfterMs: number }} decision
 * @returns {number | null}
 */
export function retryAfterSeconds(decision) {
  if (!Number.isFinite(decision.retryAfterMs)) return null;
  return Math.max(1, secondsUntil(decision.retryAfterMs));
}

/**
 * decisionHeaders lists the [name, value] pairs a response to a checked request carries in `mode`,
 * given the precomputed `policy` (policyHeader of the same rules). With `epochNowMs` (the limiter's
 * clock, for legacyReset "epoch"), X-RateLimit-Reset is the Unix time in seconds the quota is back.
 * @param {any} decision
 * @param {HeaderMode} mode
 * @param {string} policy
 * @param {number | null} [epochNowMs]
 * @returns {Array<[string, string]>}
 */
export function decisionHeaders(decision, mode, policy, epochNowMs = null) {
  /** @type {Array<[string, string]>} */
  const pairs = [];
  const counted = !(decision.allowed && decision.store === "none");
  const reset = String(secondsUntil(decision.resetMs));
  if ((mode === "legacy" || mode === "both") && counted) {
    pairs.push(
      ["X-RateLimit-Limit", String(decision.limit)],
      ["X-RateLimit-Remaining", String(decision.remaining)],
      ["X-RateLimit-Reset", epochNowMs === null ? reset : String(secondsUntil(epochNowMs + decision.resetMs))],
    );
  }
  if (mode === "draft" || mode === "draft-8" || mode === "both") {
    const rules = decision.rules;
    let limits = "";
    for (let i = 0; i < rules.length; i++) {
      const check = decision.checks[i];
      if (check !== null) limits += (limits === "" ? "" : ", ") + serviceLimitItem(rules[i], check);
    }
    pairs.push(["RateLimit-Policy", policy]);
    if (limits !== "") pairs.push(["RateLimit", limits]);
  }
  if (mode === "draft-6" || mode === "draft-7") {
    pairs.push(["RateLimit-Policy", decision.rules.map(unnamedPolicyItem).join(", ")]);
    const limit = String(decision.limit);
    const remaining = String(decision.remaining);
    if (counted && mode === "draft-6") pairs.push(["RateLimit-Limit", limit], ["RateLimit-Remaining", remaining], ["RateLimit-Reset", reset]);
    if (counted && mode === "draft-7") pairs.push(["RateLimit", `limit=${limit}, remaining=${remaining}, reset=${reset}`]);
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
 * bypassHeaders lists the pairs of a response the dev bypass let through: that it was bypassed, never
 * which variable did it (a client has no business knowing the Worker's configuration).
 * @returns {Array<[string, string]>}
 */
export function bypassHeaders() {
  return [[BYPASS_HEADER, "true"]];
}

// When a second limiter heads a response another limiter of the same request already headed (an
// outer middleware, after an inner one on the same route), its fields stack on the first's instead
// of replacing them: RateLimit-Policy and draft-8's RateLimit are lists, so they gain this limiter's
// members; the X-RateLimit-* trio, draft-6's RateLimit-Limit/-Remaining/-Reset and draft-7's
// RateLimit dictionary name one limit only, so they stay the one with less remaining (on a tie, the
// inner one, which is the one that denied if any did).
const LIST_FIELDS = new Set(["ratelimit-policy", "ratelimit"]);
const ONE_LIMIT_FIELDS = new Set(["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"]);
const DICTIONARY_REMAINING = /(?:^|,\s*)remaining=(\d+)/;

// Whether a field names one limit (not a list every limiter adds to).
/** @param {string} field @param {string} value @returns {boolean} */
function isOneLimit(field, value) {
  return ONE_LIMIT_FIELDS.has(field) || (field === "ratelimit" && value.startsWith("limit="));
}

// The remaining count a set of fields states, or null.
/** @param {(name: string) => string | null | undefined} get @returns {number | null} */
function remainingOf(get) {
  const plain = get("x-ratelimit-remaining") ?? get("ratelimit-remaining");
  if (plain !== null && plain !== undefined) return Number(plain);
  const dictionary = DICTIONARY_REMAINING.exec(get("ratelimit") ?? "");
  return dictionary === null ? null : Number(dictionary[1]);
}

/** @param {Headers} headers @param {ReadonlyArray<readonly [string, string]>} pairs @param {boolean} stacking */
function setPairs(headers, pairs, stacking) {
  const before = stacking ? remainingOf((name) => headers.get(name)) : null;
  const ours = remainingOf((name) => pairs.find(([field]) => field.toLowerCase() === name)?.[1] ?? null);
  const keepTheirs = before !== null && ours !== null && before <= ours;
  for (const [name, value] of pairs) {
    const field = name.toLowerCase();
    const oneLimit = isOneLimit(field, value);
    if (oneLimit && keepTheirs) continue;
    if (stacking && !oneLimit && LIST_FIELDS.has(field) && headers.has(field)) headers.set(name, `${headers.get(field)}, ${value}`);
    else headers.set(name, value);
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
