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
