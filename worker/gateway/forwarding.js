// Which headers cross the gateway, in each direction.
//
// Upstream-bound: the client's headers minus
//  - hop-by-hop headers: they describe the client's connection to Cloudflare, not the Worker's
//    subrequest, and are never forwarded (workerd itself removes `Connection` and the headers it
//    names before the Worker sees a request; the check here covers other runtimes);
//  - the header that carries the upstream credential: the client can neither supply nor override it;
//  - credentials, client-identifying headers, and headers an upstream may obey to reinterpret the
//    request, as nginx/Envoy deployments strip them: authorization, cookie, cf-*, x-forwarded-*,
//    client-IP headers (true-client-ip, x-real-ip, forwarded, ...), method overrides
//    (x-http-method-override, ...), URL rewrites (x-original-url, x-rewrite-url, ...), and any header
//    whose name holds an underscore (CGI-style servers read `x_real_ip` as `x-real-ip`): not
//    forwarded unless the route lists them in `forwardHeaders`;
//  - any the route lists in `stripHeaders`.
// The route's `clientIpHeader`, when set, is then set to the client's address (cf-connecting-ip).
// Client-bound: the upstream's headers minus hop-by-hop ones, with every secret masked wherever it
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
  // Credentials meant for the gateway.
  "authorization",
  "proxy-authorization",
  "cookie",
  // Client addresses and the original request as a proxy describes them: only the gateway may say.
  "forwarded",
  "x-forwarded",
  "forwarded-for",
  "x-forwarded-for",
  "x-forwarded-host",
  "x-forwarded-proto",
  "x-forwarded-port",
  "x-forwarded-prefix",
  "x-forwarded-server",
  "x-forwarded-uri",
  "x-real-ip",
  "true-client-ip",
  "x-client-ip",
  "x-cluster-client-ip",
  "x-originating-ip",
  "x-remote-ip",
  "x-remote-addr",
  "client-ip",
  "fastly-client-ip",
  "x-host",
  "x-original-host",
  // Method overrides: an upstream that obeys them would run another method than the route allows.
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  // URL rewrites: an upstream that obeys them would serve another path than the route's.
  "x-original-url",
  "x-original-uri",
  "x-rewrite-url",
]);
const STRIPPED_SET = new Set(STRIPPED_BY_DEFAULT);

/**
 * Whether `name` (lower case) is dropped unless a route lists it in forwardHeaders.
 * @param {string} name
 * @returns {boolean}
 */
export function isStrippedByDefault(name) {
  return STRIPPED_SET.has(name) || name.startsWith("cf-") || name.includes("_");
}

/** @param {string} name @returns {boolean} */
export function isNeverForwarded(name) {
  return NEVER_FORWARDED.has(name);
}

// Headers the sender named in `Connection` are hop-by-hop too (RFC 9110, 7.6.1).
/** @param {Headers} headers @returns {Set<string> | null} */
function connectionListed(headers) {
  const value = headers.get("connection");
  if (value === null) return null;
  return new Set(value.split(",").map((token) => token.trim().toLowerCase()));
}

/**
 * The fields of `pairs` as the runtime takes them cheapest: a record (workerd converts a list of
 * [name, value] pairs at about twice a record's cost per field: 4 fields ~15 us as pairs, ~6 us as a
 * record), or the pairs themselves when a name repeats (Set-Cookie), which a record cannot hold, or
 * is `__proto__` (a valid field name that Node's Headers drops from a record: its converter assigns
 * it to a plain object).
 * @param {[string, string][]} pairs
 * @returns {Record<string, string> | [string, string][]}
 */
export function fieldsInit(pairs) {
  /** @type {Record<string, string>} */
  const record = Object.create(null);
  for (const [name, value] of pairs) {
    if (name in record || name === "__proto__") return pairs;
    record[name] = value;
  }
  return record;
}

/**
 * The headers of the upstream request, as the Headers init the runtime builds its Headers from once
 * (fieldsInit; a Headers built here costs a native call per append): `upstream` is a validated
 * route upstream, `secret` the value of its credential (or null when it has none). Every name is
 * lower case and appears once, except those the client itself repeated.
 * @param {Headers} incoming
 * @param {import("./config.js").GatewayUpstream} upstream
 * @param {string | null} secret
 * @returns {Record<string, string> | [string, string][]}
 */
export function upstreamRequestHeaders(incoming, upstream, secret) {
  const listed = connectionListed(incoming);
  const credentialHeader = upstream.auth?.header;
  const { forwardHeaders, stripHeaders = [], clientIpHeader = null } = upstream;
  /** @type {[string, string][]} */
  const headers = [];
  // forEach, not for...of: one call into the runtime for the whole list, where the iterator crosses
  // into it per field and builds a [name, value] array each time. Measured in workerd (a request's 8
  // fields walked 100 times in one request, beside the bare Worker): ~2.5 us a walk against ~4.5 us.
  incoming.forEach((value, name) => {
    if (NEVER_FORWARDED.has(name) || name === credentialHeader || listed?.has(name)) return;
    if (isStrippedByDefault(name) && !forwardHeaders.includes(name)) return;
    if (stripHeaders.includes(name) || name === clientIpHeader) return;
    headers.push([name, value]);
  });
  if (clientIpHeader !== null) {
    const address = incoming.get("cf-connecting-ip");
    if (address !== null) headers.push([clientIpHeader, address]);
  }
  if (upstream.auth !== null) {
    const { header, scheme } = upstream.auth;
    // A route with auth has its secret (gateway.js refuses the request when it is not set).
    const value = /** @type {string} */ (secret);
    headers.push([header, scheme === "" ? value : `${scheme} ${value}`]);
  }
  return fieldsInit(headers);
}

/**
 * The headers of the response to the client, as a Headers init (fieldsInit): the upstream's, minus hop-by-hop
 * ones, each value passed through `mask` (which hides the upstream credential), with cache-control per
 * the route's policy: `no-store` on every error status, the configured directive (or the upstream's
 * own, for "upstream") on success; then `ours` (the gateway's rate-limit fields), each replacing an
 * upstream field of the same name, as Headers.set would.
 * @param {Headers} upstreamHeaders
 * @param {number} status
 * @param {string} cacheControl
 * @param {(value: string) => string} mask
 * @param {ReadonlyArray<readonly [string, string]>} [ours]
 * @returns {Record<string, string> | [string, string][]}
 */
export function clientResponseHeaders(upstreamHeaders, status, cacheControl, mask, ours = []) {
  const listed = connectionListed(upstreamHeaders);
  const cache = status >= 400 ? "no-store" : cacheControl === "upstream" ? null : cacheControl;
  const replaced = ours.length === 0 ? null : new Set(ours.map(([name]) => name.toLowerCase()));
  /** @type {[string, string][]} */
  const headers = [];
  // forEach for the reason upstreamRequestHeaders gives.
  upstreamHeaders.forEach((value, name) => {
    if (HOP_BY_HOP.includes(name) || listed?.has(name) || replaced?.has(name)) return;
    if (cache !== null && name === "cache-control") return;
    headers.push([name, mask(value)]);
  });
  if (cache !== null) headers.push(["cache-control", cache]);
  for (const [name, value] of ours) headers.push([name, value]);
  return fieldsInit(headers);
}
