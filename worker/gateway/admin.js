// The admin endpoint: the metrics in Prometheus text, behind a bearer token kept in a Worker secret.
// It fails closed: with no token configured, or one too short to resist guessing, it answers 503 and
// never serves the metrics unauthenticated.

import { GatewayError, errorResponse } from "./errors.js";
import { CONTENT_TYPE } from "./prometheus.js";

// 32 characters of a random token are well beyond online guessing; shorter ones are refused.
export const MIN_TOKEN_LENGTH = 32;

const BEARER = /^Bearer +(\S+) *$/i;
const encoder = new TextEncoder();

/** @param {string} text @returns {Promise<Uint8Array>} */
async function sha256(text) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/**
 * Whether two tokens are equal, in time that depends on neither: both are hashed first (so their
 * lengths do not show), and the digests are compared without an early exit.
 * @param {string} presented
 * @param {string} expected
 * @returns {Promise<boolean>}
 */
export async function tokensEqual(presented, expected) {
  const [a, b] = await Promise.all([sha256(presented), sha256(expected)]);
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

/**
 * The answer to a request for the admin path: `metrics`' counters, then the families `more()` returns.
 * @param {Request} request
 * @param {any} env
 * @param {{ path: string; tokenSecret: string }} admin
 * @param {import("./metrics.js").GatewayMetrics} metrics
 * @param {() => import("./metrics.js").MetricFamily[]} [more]
 * @returns {Promise<Response>}
 */
export async function serveAdmin(request, env, admin, metrics, more = () => []) {
  if (request.method !== "GET" && request.method !== "HEAD") {
    return errorResponse(GatewayError.METHOD_NOT_ALLOWED, { headers: { allow: "GET, HEAD" } });
  }
  const expected = env?.[admin.tokenSecret];
  if (typeof expected !== "string" || expected.length < MIN_TOKEN_LENGTH) {
    return errorResponse(GatewayError.ADMIN_DISABLED);
  }
  const presented = BEARER.exec(request.headers.get("authorization") ?? "")?.[1];
  if (presented === undefined || !(await tokensEqual(presented, expected))) {
    return errorResponse(GatewayError.UNAUTHORIZED, { headers: { "www-authenticate": 'Bearer realm="sluice"' } });
  }
  const body = request.method === "HEAD" ? null : metrics.toPrometheus(more());
  return new Response(body, { headers: { "content-type": CONTENT_TYPE, "cache-control": "no-store" } });
}
