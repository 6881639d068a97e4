// The upstream call of one proxied request: the credential added server-side, a per-route timeout,
// redirects handed back to the client rather than followed (following one would leave the configured
// host with the credential attached), and failures turned into sluice's own 502/504.

import { watchBody } from "./body-watchdog.js";
import { GatewayError, errorResponse } from "./errors.js";
import { clientResponseHeaders, upstreamRequestHeaders } from "./forwarding.js";
import { secretMasker } from "./redact.js";

const BODYLESS_METHODS = new Set(["GET", "HEAD"]);
// Statuses whose response must not have a body (the Response constructor refuses one).
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

function fetcherFor(upstream, env) {
  return upstream.service === null ? globalThis : env[upstream.service];
}

/**
 * Forwards `request` to `targetUrl` for the route's `upstream`. `secret` is the credential's value
 * (null when the upstream takes none); `now` reads the clock in milliseconds.
 * Resolves to { response, upstreamStatus, upstreamLatencyMs, failure } where failure is null,
 * "timeout" or "unreachable" (then upstreamStatus is null and response is sluice's 504 or 502).
 * Never rejects. The body streams afterwards: if the upstream then falls silent for the route's
 * bodyTimeoutMs while the client waits, the body is cut off and `onBodyStall()` is called.
 */
export async function proxyRequest({ request, targetUrl, upstream, env, secret, now, onBodyStall = () => {} }) {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, upstream.timeoutMs);
  const started = now();
  let upstreamResponse;
  try {
    upstreamResponse = await fetcherFor(upstream, env).fetch(targetUrl, {
      method: request.method,
      headers: upstreamRequestHeaders(request.headers, upstream, secret),
      body: BODYLESS_METHODS.has(request.method) ? undefined : request.body,
      redirect: "manual",
      signal: controller.signal,
    });
  } catch {
    // The error's message is not kept: it is the runtime's, and may quote the target.
    const failure = timedOut ? "timeout" : "unreachable";
    return {
      response: errorResponse(timedOut ? GatewayError.UPSTREAM_TIMEOUT : GatewayError.UPSTREAM_UNREACHABLE),
      upstreamStatus: null,
      upstreamLatencyMs: now() - started,
      failure,
    };
  } finally {
    // This timer covers the wait for the response head; the body has its watchdog (below).
    clearTimeout(timer);
  }
  const upstreamLatencyMs = now() - started;
  const mask = secretMasker(secret);
  const { status, statusText } = upstreamResponse;
  const hasBody = upstreamResponse.body !== null && !NULL_BODY_STATUSES.has(status);
  const watched = hasBody && upstream.bodyTimeoutMs !== null ? watchBody(upstreamResponse.body, upstream.bodyTimeoutMs, onBodyStall) : upstreamResponse.body;
  const body = hasBody ? mask.body(watched) : null;
  const response = new Response(body, {
    status,
    statusText,
    headers: clientResponseHeaders(upstreamResponse.headers, status, upstream.cacheControl, mask.text),
  });
  return { response, upstreamStatus: status, upstreamLatencyMs, failure: null };
}
