// The gateway's own error responses: JSON `{ "error": <message>, "code": <code> }` with a code that
// is sluice's (never an upstream's), and `cache-control: no-store` so no cache keeps an error.

export const GatewayError = Object.freeze({
  NO_ROUTE: { status: 404, code: "sluice_no_route", error: "no route for this path" },
  METHOD_NOT_ALLOWED: { status: 405, code: "sluice_method_not_allowed", error: "method not allowed on this route" },
  BAD_PATH: { status: 400, code: "sluice_bad_path", error: "path refused" },
  DENIED_BY_LIST: { status: 403, code: "sluice_denied", error: "forbidden" },
  BODY_TOO_LARGE: { status: 413, code: "sluice_body_too_large", error: "request body too large" },
  RATE_LIMITED: { status: 429, code: "sluice_rate_limited", error: "too many requests" },
  UPSTREAM_TIMEOUT: { status: 504, code: "sluice_upstream_timeout", error: "upstream did not answer in time" },
  UPSTREAM_UNREACHABLE: { status: 502, code: "sluice_upstream_unreachable", error: "upstream unreachable" },
  UPSTREAM_BAD_RESPONSE: { status: 502, code: "sluice_upstream_bad_response", error: "upstream answered with a status that cannot be relayed" },
  LIMITER_UNAVAILABLE: { status: 503, code: "sluice_limiter_unavailable", error: "rate limiter unavailable" },
  MISCONFIGURED: { status: 500, code: "sluice_misconfigured", error: "gateway misconfigured" },
  INTERNAL: { status: 500, code: "sluice_internal_error", error: "internal error" },
  UNAUTHORIZED: { status: 401, code: "sluice_unauthorized", error: "missing or wrong bearer token" },
  // nginx's 499: the client went away before its request ended. Nobody reads it; the log and the
  // counter do (a client hanging up is not a limiter or gateway failure).
  CLIENT_ABORTED: { status: 499, code: "sluice_client_aborted", error: "the client closed the request before its body ended" },
  UNSUPPORTED_BODY_TYPE: {
    status: 415,
    code: "sluice_unsupported_body_type",
    error: "a login body must be application/json or application/x-www-form-urlencoded (utf-8)",
  },
  AMBIGUOUS_ACCOUNT: { status: 400, code: "sluice_ambiguous_account", error: "the request names the account more than once (in any case or spelling)" },
  INVALID_ACCOUNT: { status: 400, code: "sluice_invalid_account", error: "the account name holds a control character" },
  MALFORMED_CREDENTIALS: { status: 400, code: "sluice_malformed_credentials", error: "the Authorization header must be one well-formed Bearer token on this route" },
  ADMIN_DISABLED: { status: 503, code: "sluice_admin_disabled", error: "admin endpoint not configured" },
});

/** The response for one of GatewayError's entries; `extra` adds body fields, `headers` headers. */
/**
 * @param {{ status: number; code: string; error: string }} kind
 * @param {{ extra?: Record<string, unknown>; headers?: HeadersInit }} [options]
 * @returns {Response}
 */
export function errorResponse(kind, { extra, headers } = {}) {
  const response = Response.json({ error: kind.error, code: kind.code, ...extra }, { status: kind.status, headers });
  response.headers.set("cache-control", "no-store");
  return response;
}
