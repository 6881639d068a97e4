// The one structured log line per request. It is built from a fixed set of fields — never from
// request or response headers, and never with the query string — so neither the upstream credential
// nor a client's own credentials can end up in the logs.

// A Ray ID as Cloudflare's edge writes it: 16 hex digits, "-", the data center's IATA code.
const RAY_ID = /^[0-9a-f]{16}-([A-Z]{3})$/;

/**
 * platformRay is the request's CF-Ray when the platform set it, else null. Cloudflare's edge sets
 * CF-Ray on every request it hands a Worker, replacing what the client sent; where nothing stands in
 * front (wrangler dev, Miniflare, tests) the header is the client's, and a client must not choose the
 * id its request is logged under (issue 23). The gateway tells them apart by what a client cannot
 * set: the ray's data center must be the one in `request.cf.colo`, which the runtime fills in, never a
 * header. Anything else is logged as null.
 * @param {Request & { cf?: { colo?: unknown } }} request
 * @returns {string | null}
 */
export function platformRay(request) {
  const value = request.headers.get("cf-ray");
  // The header first: reading request.cf makes the runtime build the whole cf object (a profile of
  // bench/gateway-cpu.js put 7 % of a 429's CPU here), and most requests under test carry no CF-Ray.
  if (value === null) return null;
  const colo = request.cf?.colo;
  if (typeof colo !== "string") return null;
  const match = RAY_ID.exec(value);
  return match !== null && match[1] === colo ? value : null;
}

/** The record a request starts with; the gateway fills it in as the request proceeds. @param {Request} request @returns {Record<string, any>} */
export function newLogRecord(request) {
  return {
    event: "sluice.request",
    cfRay: platformRay(request),
    method: request.method,
    route: null,
    status: 0,
    upstreamStatus: null,
    upstreamLatencyMs: null,
    // none | bypassed | admitted | would_have_denied | denied | limiter_error
    decision: "none",
    rules: [],
    error: null,
  };
}

/**
 * Each rule as the log shows it: its effective mode, what it did, what it left, and which store
 * decided (a rule whose store is "durable" decided by "memory" fell back; "none": failMode decided).
 * @param {readonly import("./decide.js").RuleVerdict[]} verdicts
 */
export function logRules(verdicts) {
  return verdicts.map((verdict) => ({
    name: verdict.rule.name,
    mode: verdict.mode,
    event: verdict.event,
    remaining: verdict.decision?.remaining ?? null,
    store: verdict.store,
    // A rule that counts on the response: whether its response was charged (null: not settled).
    ...(countsResponse(verdict.rule) ? { charged: verdict.charged ?? null } : {}),
  }));
}

/** @param {any} rule */
function countsResponse(rule) {
  return rule.countWhen !== undefined || rule.costFrom !== undefined;
}

/** The request's decision word, from decide.js's result. @param {Pick<import("./decide.js").RouteVerdict, "blocked" | "verdicts" | "checked">} verdict @returns {string} */
export function requestDecision({ blocked, verdicts, checked }) {
  if (blocked) return "denied";
  if (checked.length === 0) return "bypassed";
  return verdicts.some((/** @type {import("./decide.js").RuleVerdict} */ verdict) => verdict.event === "would_have_denied") ? "would_have_denied" : "admitted";
}

/** @param {string} line */
export function defaultLog(line) {
  console.log(line);
}
