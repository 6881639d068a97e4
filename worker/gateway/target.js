// The upstream URL of a proxied request: the configured upstream plus the rest of the path, built so
// that it can never leave the configured origin or climb above the configured base path.
//
// By the time a Worker sees `request.url`, the runtime's URL parser has already resolved `.`/`..`
// segments (also `%2e%2e`) and turned `\` into `/`. The gateway then puts the path in its canonical
// form (../src/http/paths.js) before choosing the route, so the route, its keys and the forwarded path are one
// spelling. What a *second* parser — the upstream's — might still read differently is refused, never
// rewritten: a client that sends it is probing.

import { canonicalPath, canonicalSegment, isPlainPath } from "../src/http/paths.js";

/**
 * Why one raw path segment is unsafe to forward, or null when it is safe. `isLast` allows the empty
 * segment of a trailing slash.
 * @param {string} raw
 * @param {boolean} isLast
 * @returns {string | null}
 */
export function segmentProblem(raw, isLast) {
  return canonicalSegment(raw, isLast).problem ?? null;
}

/**
 * Why a path (`/a/b`, or "" for none) is unsafe to forward, or null when every segment is safe.
 * @param {string} path
 * @returns {string | null}
 */
export function pathProblem(path) {
  return canonicalPath(path).problem ?? null;
}

/**
 * The URL to forward to: `upstream` is a validated upstream ({ origin, basePath } with basePath "" or
 * "/a/b"), `remainder` the request path after the route prefix ("" or "/...", canonical or not: it is
 * put in canonical form here), `search` the request's query ("" or "?..."). Returns { url } or
 * { problem } when the request must be refused.
 * @param {{ origin: string, basePath: string }} upstream
 * @param {string} remainder
 * @param {string} search
 * @returns {{ url: string, problem?: undefined } | { url?: undefined, problem: string }}
 */
export function upstreamTarget(upstream, remainder, search) {
  const canonical = canonicalPath(remainder);
  if (canonical.problem !== undefined) return { problem: canonical.problem };
  const path = upstream.basePath + canonical.path || "/";
  const url = upstream.origin + path + search;
  // A path of plain segments (literal characters only, no dot segment) is one no URL parser rewrites,
  // and the query that follows cannot reach the origin or the path: nothing to check, no parse.
  if (isPlainPath(path)) return { url };
  // The string is built from trusted parts, so parsing it must give back exactly those parts; if the
  // parser would rewrite anything, some check above is missing, and refusing is the safe answer.
  const parsed = new URL(url);
  if (parsed.origin !== upstream.origin || parsed.pathname !== path) {
    return { problem: "a path the URL parser would rewrite" };
  }
  return { url };
}
