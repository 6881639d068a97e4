// The one canonical form of a URL path, used to choose a gateway route, to key a request by its
// route, and (in the gateway) as the path forwarded upstream. Two spellings an upstream would read as
// the same path must not pick different routes or keys, or a client could dodge a route's strict limit
// by re-spelling its path (issue 11 §1: `POST /api/%63heckout` was counted under `/api/*`).
//
// The form, segment by segment (docs/security.md, "Canonical paths"):
//  - a percent-escape of a character that may stand in a path segment as it is (RFC 3986 unreserved
//    characters, as §6.2.2.2 says, and also sub-delims, `:` and `@`, which upstreams decode just the
//    same) is decoded: `%63` -> `c`, `%7E` -> `~`, `%21` -> `!`;
//  - every other escape is kept, its hex in upper case (`%c3%a9` -> `%C3%A9`);
//  - case is kept (route prefixes are compared ignoring ASCII case, see routes.js);
//  - a trailing slash is kept (it selects the same route; the upstream sees it).
// Refused, because some upstream would read them otherwise, or as a probe: an empty inner segment
// (`//`), an encoded `/` or `\`, a dot segment (`.`, `..`, in any spelling), a segment ending in a dot
// or space (Windows servers drop those), matrix parameters (`;`, raw or encoded: Java servers drop
// `;jsessionid=...` before routing), control characters and NUL, escapes that are not valid UTF-8
// (overlong forms included), double encoding (`%252e`), characters outside RFC 3986's `pchar`,
// Unicode that NFKC folds into a slash or a dot, and any non-ASCII character that NFKC or Unicode case
// mapping turns into ASCII (issue 23: the Kelvin sign in `/api/chec%E2%84%AAout`, fullwidth letters,
// the long s, the dotless i, ligatures such as "ﬁ") or that renders as nothing (a default-ignorable
// code point such as U+00AD or U+200B): an upstream that folds or strips them would serve a strict
// route's path under a lenient route's rule. Refusing them, rather than folding them and forwarding
// the folded form, keeps the path the upstream is sent the client's byte for byte (no legitimate
// client spells an ASCII path that way) and leaves every other non-ASCII path alone.

const PCHAR_OR_ESCAPE = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%]*$/;
const MALFORMED_ESCAPE = /%(?![0-9A-Fa-f]{2})/;
// Characters written as they are in the canonical form (a pchar, minus `%`, and minus `;`, refused).
const LITERAL = /^[A-Za-z0-9\-._~!$&'()*+,=:@]$/;
const ESCAPE_IN_DECODED = /%[0-9A-Fa-f]{2}/;
const NON_ASCII = /[^\x00-\x7f]/;
const ASCII = /[\x00-\x7f]/;
const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;
// A path whose every segment is plain — literal characters only (no escape, no `;`), not empty (but a
// trailing slash), not ending in a dot (so never a dot segment) — is its own canonical form: what
// canonicalSegment keeps of such a segment is the segment. Most paths are such; one test finds them.
const PLAIN_PATH = /^(?:\/[A-Za-z0-9\-._~!$&'()*+,=:@]*[A-Za-z0-9\-_~!$&'()*+,=:@])+\/?$/;

/**
 * Whether the non-ASCII character `char` becomes (or holds) ASCII under NFKC or Unicode case mapping,
 * alone or after the other: "K" (Kelvin sign) -> "k", "ｃ" -> "c", "ſ" -> "S", "ı" -> "I", "İ" -> "i̇".
 * @param {string} char
 * @returns {boolean}
 */
export function foldsToAscii(char) {
  const compatible = char.normalize("NFKC");
  for (const form of [compatible, char.toLowerCase(), char.toUpperCase(), compatible.toLowerCase(), compatible.toUpperCase()]) {
    if (ASCII.test(form) || ASCII.test(form.normalize("NFKC"))) return true;
  }
  return false;
}
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * A path in canonical form, or why it cannot have one.
 * @typedef {{ path: string, problem?: undefined } | { path?: undefined, problem: string }} CanonicalPath
 */

/** @param {string} decoded @returns {boolean} */
function isDotSegment(decoded) {
  return decoded === "." || decoded === "..";
}

/**
 * The canonical spelling of one raw path segment ({ segment }) or why it has none ({ problem }).
 * `isLast` allows the empty segment of a trailing slash.
 * @param {string} raw
 * @param {boolean} isLast
 * @returns {{ segment: string, problem?: undefined } | { segment?: undefined, problem: string }}
 */
export function canonicalSegment(raw, isLast) {
  if (raw === "") return isLast ? { segment: "" } : { problem: "an empty path segment (//)" };
  if (!PCHAR_OR_ESCAPE.test(raw)) return { problem: "a character not allowed in a URL path" };
  if (MALFORMED_ESCAPE.test(raw)) return { problem: "a malformed percent-escape" };
  let segment = raw;
  let decoded = raw;
  if (raw.includes("%")) {
    const bytes = [];
    segment = "";
    for (let i = 0; i < raw.length; i++) {
      if (raw[i] !== "%") {
        bytes.push(raw.charCodeAt(i));
        segment += raw[i];
        continue;
      }
      const value = parseInt(raw.slice(i + 1, i + 3), 16);
      bytes.push(value);
      const char = String.fromCharCode(value);
      segment += LITERAL.test(char) ? char : `%${raw.slice(i + 1, i + 3).toUpperCase()}`;
      i += 2;
    }
    try {
      decoded = strictUtf8.decode(new Uint8Array(bytes));
    } catch {
      return { problem: "an escape that is not valid UTF-8 (overlong or truncated)" };
    }
  }
  for (let i = 0; i < decoded.length; i++) {
    const code = decoded.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return { problem: "an encoded control character" };
  }
  if (decoded.includes("/")) return { problem: "an encoded slash" };
  if (decoded.includes("\\")) return { problem: "an encoded backslash" };
  if (ESCAPE_IN_DECODED.test(decoded)) return { problem: "a double-encoded escape" };
  if (isDotSegment(decoded.split(";", 1)[0])) return { problem: "a dot segment" };
  if (decoded.includes(";")) return { problem: "a matrix parameter (;)" };
  if (decoded.endsWith(".") || decoded.endsWith(" ")) return { problem: "a segment ending in a dot or space" };
  if (NON_ASCII.test(decoded)) {
    const folded = decoded.normalize("NFKC");
    if (folded.includes("/") || folded.includes("\\") || isDotSegment(folded) || folded.endsWith(".")) {
      return { problem: "a character that normalises to a slash or dot" };
    }
    if (DEFAULT_IGNORABLE.test(decoded)) return { problem: "an invisible (default-ignorable) character" };
    for (const char of decoded) {
      if (char.charCodeAt(0) >= 0x80 && foldsToAscii(char)) return { problem: "a non-ASCII character that Unicode folds into ASCII" };
    }
  }
  return { segment };
}

/**
 * isPlainPath tells whether `path` is made of plain segments only (see PLAIN_PATH): its own canonical
 * form, and one that no URL parser rewrites (no escape, no dot segment, no character it would encode).
 * @param {string} path
 * @returns {boolean}
 */
export function isPlainPath(path) {
  return PLAIN_PATH.test(path);
}

/**
 * The canonical form of `path` ("" for none, else starting with "/"), or why it has none.
 * @param {string} path
 * @returns {CanonicalPath}
 */
export function canonicalPath(path) {
  if (path === "") return { path: "" };
  if (path[0] !== "/") return { problem: "a path that does not start with /" };
  if (isPlainPath(path)) return { path };
  const segments = path.slice(1).split("/");
  let canonical = "";
  for (let i = 0; i < segments.length; i++) {
    const result = canonicalSegment(segments[i], i === segments.length - 1);
    if (result.problem !== undefined) return { problem: result.problem };
    canonical += `/${result.segment}`;
  }
  return { path: canonical };
}
