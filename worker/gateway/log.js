// The one structured log line per request. It is built from a fixed set of fields — never from
// request or response headers, and never with the query string — so neither the upstream credential
// nor a client's own credentials can end up in the logs.

/** The record a request starts with; the gateway fills it in as the request proceeds. */
export function newLogRecord(request) {
  return {
    event: "sluice.request",
    cfRay: request.headers.get("cf-ray"),
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
 */
export function logRules(verdicts) {
  return verdicts.map((verdict) => ({
    name: verdict.rule.name,
    mode: verdict.mode,
    event: verdict.event,
    remaining: verdict.decision?.remaining ?? null,
    store: verdict.store,
  }));
}

/** The request's decision word, from decide.js's result. */
export function requestDecision({ blocked, verdicts, checked }) {
  if (blocked) return "denied";
  if (checked.length === 0) return "bypassed";
  return verdicts.some((verdict) => verdict.event === "would_have_denied") ? "would_have_denied" : "admitted";
}

export function defaultLog(line) {
  console.log(line);
}
