// Which headers cross the gateway, in each direction.
//
// Upstream-bound: the client's headers minus
//  - hop-by-hop headers (and any the client names in `Connection`): they describe the client's
//    connection to Cloudflare, not the Worker's subrequest, and are never forwarded;
//  - the header that carries the upstream credential: the client can neither supply nor override it;
//  - credentials and client-identifying headers meant for this gateway (authorization, cookie, cf-*,
//    x-forwarded-*, ...): not forwarded unless the route lists them in `forwardHeaders`.
// Client-bound: the upstream's headers minus hop-by-hop ones, with the credential masked wherever it
// is echoed, and cache-control set by the route's policy.

export const HOP_BY_HOP = Object.freeze([
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

// The runtime sets these itself for the subrequest.
const NEVER_FORWARDED = new Set([...HOP_BY_HOP, "host"]);

// Forwardable only when a route lists them, exactly (any `cf-` header counts as one of these).
export const STRIPPED_BY_DEFAULT = Object.freeze([
  "authorization",
  "proxy-authorization",
  "cookie",
  "forwarded",
  "x-forwarded-for",
  "x-forwarded-host",
  "x-forwarded-proto",
  "x-real-ip",
]);
const STRIPPED_SET = new Set(STRIPPED_BY_DEFAULT);

export function isStrippedByDefault(name) {
  return STRIPPED_SET.has(name) || name.startsWith("cf-");
}

export function isNeverForwarded(name) {
  return NEVER_FORWARDED.has(name);
}

// Headers the sender named in `Connection` are hop-by-hop too (RFC 9110, 7.6.1).
function connectionListed(headers) {
  const value = headers.get("connection");
  if (value === null) return null;
  return new Set(value.split(",").map((token) => token.trim().toLowerCase()));
}

/**
 * The headers of the upstream request: `upstream` is a validated route upstream, `secret` the value of
 * its credential (or null when it has none).
 */
export function upstreamRequestHeaders(incoming, upstream, secret) {
  const listed = connectionListed(incoming);
  const credentialHeader = upstream.auth?.header;
  const headers = new Headers();
  for (const [name, value] of incoming) {
    if (NEVER_FORWARDED.has(name) || name === credentialHeader || listed?.has(name)) continue;
    if (isStrippedByDefault(name) && !upstream.forwardHeaders.includes(name)) continue;
    headers.append(name, value);
  }
  if (upstream.auth !== null) {
    const { header, scheme } = upstream.auth;
    headers.set(header, scheme === "" ? secret : `${scheme} ${secret}`);
  }
  return headers;
}

/**
 * The headers of the response to the client: the upstream's, minus hop-by-hop ones, each value passed
 * through `mask` (which hides the upstream credential), with cache-control per the route's policy:
 * `no-store` on every error status, the configured directive (or the upstream's own, for "upstream")
 * on success.
 */
export function clientResponseHeaders(upstreamHeaders, status, cacheControl, mask) {
  const listed = connectionListed(upstreamHeaders);
  const headers = new Headers();
  for (const [name, value] of upstreamHeaders) {
    if (HOP_BY_HOP.includes(name) || listed?.has(name)) continue;
    headers.append(name, mask(value));
  }
  if (status >= 400) headers.set("cache-control", "no-store");
  else if (cacheControl !== "upstream") headers.set("cache-control", cacheControl);
  return headers;
}
