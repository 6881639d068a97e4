// The path a log line's request URI gives the gateway: `new URL(request.url).pathname`, as gateway.js
// reads it, then paths.js's canonical form. The URL parser resolves dot segments, turns "\" into "/"
// and escapes some characters before the gateway sees the path, so anything but the plainest path goes
// through the same parser. The plain ones (letters, digits and -._~!$&'()*+,=:@ in segments with no
// dot-only segment) come out of the parser unchanged, and skip it: it costs more than the rest of a
// decision.
import { canonicalPath } from "./library.js";

const PLAIN_PATH = /^\/[A-Za-z0-9\-._~!$&'()*+,=:@/]*$/;
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;
const BASE = "https://replay.invalid";
// Paths repeat (an API's endpoints, static files): the last few thousand answers are kept, and all
// forgotten at once when there are more, so the memory stays fixed whatever the log.
const REMEMBERED = 8192;
/** @type {Map<string, import("../../src/http/paths.js").CanonicalPath>} */
let remembered = new Map();

/**
 * requestPath gives the canonical path of a logged request target (path and query), or why the
 * gateway would refuse it: { path } or { problem }.
 * @param {string} uri
 * @returns {import("../../src/http/paths.js").CanonicalPath}
 */
export function requestPath(uri) {
  const end = endOfPath(uri);
  const raw = end === uri.length ? uri : uri.slice(0, end);
  let answer = remembered.get(raw);
  if (answer === undefined) {
    answer = canonicalOf(raw);
    if (remembered.size >= REMEMBERED) remembered = new Map();
    remembered.set(raw, answer);
  }
  return answer;
}

/** @param {string} raw The path as logged, without its query. */
function canonicalOf(raw) {
  if (PLAIN_PATH.test(raw) && !DOT_SEGMENT.test(raw)) return canonicalPath(raw);
  let pathname;
  try {
    pathname = new URL(BASE + raw).pathname;
  } catch {
    return { problem: "not a URL path" };
  }
  return canonicalPath(pathname);
}

/** @param {string} uri */
function endOfPath(uri) {
  for (let i = 0; i < uri.length; i++) {
    const c = uri.charCodeAt(i);
    if (c === 63 || c === 35) return i; // ? or #
  }
  return uri.length;
}
