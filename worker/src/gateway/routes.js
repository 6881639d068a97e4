// Which configured route a request path belongs to. A prefix matches whole segments only, so the
// prefix `/v1/geo` takes `/v1/geo` and `/v1/geo/...` but never `/v1/geography` or `/v1/geo@evil`.

function remainderAfter(prefix, pathname) {
  if (prefix === "/") return pathname;
  if (pathname === prefix) return "";
  if (pathname.startsWith(prefix) && pathname[prefix.length] === "/") return pathname.slice(prefix.length);
  return null;
}

/**
 * A matcher over validated routes: `match(pathname)` returns { route, remainder } for the route with
 * the longest matching prefix (remainder is "" or starts with "/"), or null when no route matches.
 */
export function createRouter(routes) {
  const byLength = [...routes].sort((a, b) => b.prefix.length - a.prefix.length);
  return function match(pathname) {
    for (const route of byLength) {
      const remainder = remainderAfter(route.prefix, pathname);
      if (remainder !== null) return { route, remainder };
    }
    return null;
  };
}
