// Which configured route a request path belongs to. The path is in canonical form (../src/http/paths.js)
// already. A prefix matches whole segments only, so the prefix `/v1/geo` takes `/v1/geo` and
// `/v1/geo/...` but never `/v1/geography` or `/v1/geo@evil`; and it matches ignoring ASCII case, so
// `/API/CHECKOUT` is `/api/checkout`'s, never the lenient `/api`'s: an upstream that routes without
// regard to case (IIS, Express by default) must not be reached under a more lenient rule
// (configuration refuses two prefixes that differ only in case).

const UPPER = /[A-Z]/;
const NON_ASCII = /[^\x00-\x7f]/;

// ASCII only: a Unicode case mapping may change a string's length, and the remainder is sliced by it.
/** @param {string} text @returns {string} */
function asciiLowerCase(text) {
  // Most paths hold no upper case; an ASCII one (every canonical path) lowers as a whole.
  if (!UPPER.test(text)) return text;
  if (!NON_ASCII.test(text)) return text.toLowerCase();
  return text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

/** @param {string} prefix @param {string} lowerPath @param {string} pathname @returns {string | null} */
function remainderAfter(prefix, lowerPath, pathname) {
  if (prefix === "/") return pathname;
  if (lowerPath === prefix) return "";
  if (lowerPath.startsWith(prefix) && lowerPath[prefix.length] === "/") return pathname.slice(prefix.length);
  return null;
}

/**
 * A matcher over validated routes: `match(pathname)` returns { route, remainder } for the route with
 * the longest matching prefix (remainder is "" or starts with "/"), or null when no route matches.
 * @template {{ prefix: string }} R
 * @param {readonly R[]} routes
 * @returns {(pathname: string) => { route: R, remainder: string } | null}
 */
export function createRouter(routes) {
  const byLength = [...routes]
    .sort((a, b) => b.prefix.length - a.prefix.length)
    .map((route) => ({ route, prefix: asciiLowerCase(route.prefix) }));
  return function match(pathname) {
    const lowerPath = asciiLowerCase(pathname);
    for (const { route, prefix } of byLength) {
      const remainder = remainderAfter(prefix, lowerPath, pathname);
      if (remainder !== null) return { route, remainder };
    }
    return null;
  };
}
