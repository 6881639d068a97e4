// The upstream call of one proxied request: the credential added server-side, a per-route timeout,
// redirects handed back to the client rather than followed (following one would leave the configured
// host with the credential attached), and failures turned into sluice's own 502/504.
//
// What the upstream says is relayed only as far as it is safe: its reason phrase is dropped (the
// client gets the standard one for the status: a reason phrase once carried the secret), every secret
// the gateway holds is masked in its headers and body (redact.js), a status the gateway cannot relay
// (outside 200-599: an informational 1xx the runtime handed over as final, or a made-up 600+) becomes
// sluice's 502, and a body of known length keeps its Content-Length, so that a client can tell a body
// cut off by bodyTimeoutMs from a complete one (response-body.js: which way a body takes, and why).

import { GatewayError, errorResponse } from "./errors.js";
import { clientResponseHeaders, upstreamRequestHeaders } from "./forwarding.js";
import { responseBody } from "./response-body.js";
import { UpstreamDeadline } from "./upstream-deadline.js";

/** @import { GatewayUpstream } from "./config.js" */

// Statuses whose response must not have a body (the Response constructor refuses one).
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/** @param {GatewayUpstream} upstream @param {any} env @returns {{ fetch: typeof fetch }} */
function fetcherFor(upstream, env) {
  return upstream.service === null ? globalThis : env[upstream.service];
}

/** Whether the Response constructor accepts `status` and a client can be given it as a final answer. @param {number} status @returns {boolean} */
function isRelayable(status) {
  return Number.isInteger(status) && status >= 200 && status <= 599;
}

/**
 * Forwards the request to `targetUrl` for the route's `upstream`: `method` and `headers` are the
 * client's, `body` the client's body read whole (request-body.js; undefined for none). `secret` is the
 * route's credential (null when the upstream takes none), `mask` the masker of every secret
 * (redact.js), `now` reads the clock in milliseconds.
 * Resolves to { response, upstreamStatus, upstreamLatencyMs, failure } where failure is null,
 * "timeout", "unreachable" (then upstreamStatus is null and response is sluice's 504 or 502) or
 * "bad_response" (a status that cannot be relayed: response is sluice's 502).
 * `responseHeaders` ([name, value] pairs, the rate-limit fields) go on a relayed response, replacing
 * the upstream's fields of the same names (built into its headers at once: no copy of the response).
 * Never rejects. The body streams afterwards: if the upstream then falls silent for the route's
 * bodyTimeoutMs while the client waits, the body is cut off and `onBodyStall()` is called; if the
 * client hangs up in the middle of a relayed body, `onClientGone()` is (response-body.js says where;
 * `waitUntil`, the request's ctx.waitUntil, keeps the relay running to see it). A small masked body
 * fetched over the network is read whole before this resolves, and cut off the same way
 * (onBodyStall() called) when it has not arrived whole within bodyTimeoutMs of the head
 * (response-body.js).
 * @param {{ method: string, headers: Headers, body: ArrayBuffer | Uint8Array | undefined, targetUrl: string, upstream: GatewayUpstream, env: any, secret: string | null, mask: ReturnType<typeof import("./redact.js").secretMasker>, now: () => number, onBodyStall?: () => void, onClientGone?: () => void, waitUntil?: ((promise: Promise<void>) => void) | null, responseHeaders?: ReadonlyArray<readonly [string, string]> }} request
 * @returns {Promise<{ response: Response, upstreamStatus: number | null, upstreamLatencyMs: number | null, failure: string | null }>}
 */
export async function proxyRequest({ method, headers, body, targetUrl, upstream, env, secret, mask, now, onBodyStall = () => {}, onClientGone = () => {}, waitUntil = null, responseHeaders = /** @type {ReadonlyArray<readonly [string, string]>} */ ([]) }) {
  const controller = new AbortController();
  // The head's bound, and the whole read's of a small body (response-body.js): one timer for both.
  const deadline = new UpstreamDeadline(upstream.timeoutMs, () => controller.abort());
  const started = now();
  let upstreamResponse;
  try {
    upstreamResponse = await fetcherFor(upstream, env).fetch(targetUrl, {
      method,
      headers: upstreamRequestHeaders(headers, upstream, secret),
      body,
      redirect: "manual",
      signal: controller.signal,
    });
  } catch {
    deadline.stop();
    // The error's message is not kept: it is the runtime's, and may quote the target.
    const timedOut = deadline.expired !== null;
    const failure = timedOut ? "timeout" : "unreachable";
    return {
      response: errorResponse(timedOut ? GatewayError.UPSTREAM_TIMEOUT : GatewayError.UPSTREAM_UNREACHABLE),
      upstreamStatus: null,
      upstreamLatencyMs: now() - started,
      failure,
    };
  }
  const upstreamLatencyMs = now() - started;
  const { status } = upstreamResponse;
  if (!isRelayable(status)) {
    deadline.stop();
    upstreamResponse.body?.cancel().catch(() => {});
    return {
      response: errorResponse(GatewayError.UPSTREAM_BAD_RESPONSE),
      upstreamStatus: Number.isInteger(status) ? status : null,
      upstreamLatencyMs,
      failure: "bad_response",
    };
  }
  const hasBody = upstreamResponse.body !== null && !NULL_BODY_STATUSES.has(status) && method !== "HEAD";
  /** @type {ReadableStream | Uint8Array | null} */
  let relayed = null;
  if (hasBody) {
    // responseBody stops `deadline`, or moves it to bound a body read whole.
    relayed = await responseBody(/** @type {Response & { body: ReadableStream }} */ (upstreamResponse), upstream, mask, onBodyStall, deadline, { onClientGone, waitUntil });
  } else {
    deadline.stop();
    upstreamResponse.body?.cancel().catch(() => {});
  }
  // No statusText: the runtime writes the standard reason phrase for the status.
  const response = new Response(relayed, {
    status,
    headers: clientResponseHeaders(upstreamResponse.headers, status, upstream.cacheControl, mask.text, responseHeaders),
  });
  return { response, upstreamStatus: status, upstreamLatencyMs, failure: null };
}
