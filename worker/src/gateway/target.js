// The upstream URL of a proxied request: the configured upstream plus the rest of the path, built so
// that it can never leave the configured origin or climb above the configured base path.
//
// By the time a Worker sees `request.url`, the runtime's URL parser has already resolved `.`/`..`
// segments (also `%2e%2e`) and turned `\` into `/`. What survives is what a *second* parser — the
// upstream's — might still read differently: encoded slashes and backslashes, double encoding, `..;`
// as some Java servers read it, overlong UTF-8 and Unicode that normalises to a dot or slash, empty
// segments (`//evil.example/x`). Those are refused, never rewritten: a client that sends them is probing.

// RFC 3986 `pchar`; anything else (a raw backslash, `|`, `[`, non-ASCII) is refused.
const PCHAR = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%]*$/;
const MALFORMED_ESCAPE = /%(?![0-9A-Fa-f]{2})/;
const ESCAPE = /%[0-9A-Fa-f]{2}/;
const NON_ASCII = /[^\x00-\x7f]/;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

// Dot segments as the upstream may read them: Tomcat and friends drop a `;param` before resolving.
function isDotSegment(decoded) {
  const bare = decoded.split(";", 1)[0];
  return bare === "." || bare === "..";
}

function percentDecode(raw) {
  const bytes = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === "%") {
      bytes.push(parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(raw.charCodeAt(i));
    }
  }
  return strictUtf8.decode(new Uint8Array(bytes));
}

/**
 * Why one raw path segment is unsafe to forward, or null when it is safe. `isLast` allows the empty
 * segment of a trailing slash.
 */
export function segmentProblem(raw, isLast) {
  if (raw === "") return isLast ? null : "an empty path segment (//)";
  if (!PCHAR.test(raw)) return "a character not allowed in a URL path";
  if (MALFORMED_ESCAPE.test(raw)) return "a malformed percent-escape";
  let decoded = raw;
  if (raw.includes("%")) {
    try {
      decoded = percentDecode(raw);
    } catch {
      return "an escape that is not valid UTF-8 (overlong or truncated)";
    }
  }
  for (let i = 0; i < decoded.length; i++) {
    const code = decoded.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return "an encoded control character";
  }
  if (decoded.includes("/")) return "an encoded slash";
  if (decoded.includes("\\")) return "an encoded backslash";
  if (ESCAPE.test(decoded)) return "a double-encoded escape";
  if (isDotSegment(decoded)) return "a dot segment";
  if (NON_ASCII.test(decoded)) {
    const folded = decoded.normalize("NFKC");
    if (folded.includes("/") || folded.includes("\\") || isDotSegment(folded)) {
      return "a character that normalises to a slash or dot";
    }
  }
  return null;
}

/** Why a path (`/a/b`, or "" for none) is unsafe to forward, or null when every segment is safe. */
export function pathProblem(path) {
  if (path === "") return null;
  if (path[0] !== "/") return "a path that does not start with /";
  const segments = path.slice(1).split("/");
  for (let i = 0; i < segments.length; i++) {
    const problem = segmentProblem(segments[i], i === segments.length - 1);
    if (problem !== null) return problem;
  }
  return null;
}

/**
 * The URL to forward to: `upstream` is a validated upstream ({ origin, basePath } with basePath "" or
 * "/a/b"), `remainder` the request path after the route prefix ("" or "/..."), `search` the request's
 * query ("" or "?..."). Returns { url } or { problem } when the request must be refused.
 */
export function upstreamTarget(upstream, remainder, search) {
  const problem = pathProblem(remainder);
  if (problem !== null) return { problem };
  const path = upstream.basePath + remainder || "/";
  const url = upstream.origin + path + search;
  // The string is built from trusted parts, so parsing it must give back exactly those parts; if the
  // parser would rewrite anything, some check above is missing, and refusing is the safe answer.
  const parsed = new URL(url);
  if (parsed.origin !== upstream.origin || parsed.pathname !== path) {
    return { problem: "a path the URL parser would rewrite" };
  }
  return { url };
}
