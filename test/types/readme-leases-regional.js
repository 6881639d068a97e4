// An isolate runs in one place: learn its hint once, from request.cf, at the top of fetch().
/** @type {string | undefined} */
let hint;
/** @param {Request} request */
export function noteLocation(request) {
  const continent = request.cf?.continent;
  hint ??= continent === "EU" ? "weur" : continent === "AS" ? "apac" : continent === "OC" ? "oc" : "enam";
}

rateLimit({ key, limit: 10_000, windowSec: 60, store: "durable", lease: { locationHint: () => hint } });
