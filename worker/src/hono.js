// sluice/hono: the rate-limit middleware for Hono.
//
//   app.use("/api/*", rateLimit({ key: ip(), limit: 120, windowSec: 60 }));
//
// A denied request gets a 429 (or what onLimited returns); an admitted one runs the handler, and its
// response carries the rate-limit headers. Either way the decision is c.get("rateLimit").
import { withHeaders } from "./headers.js";
import { createEngine, responseHeaders } from "./limiter.js";
import { limitedResponse } from "./responses.js";

export { apiKey, compose, firstOf, ip, route, user } from "./keys.js";
export { SluiceConfigError } from "./errors.js";
export { concurrency } from "./concurrency/hono.js";

// c.executionCtx throws where there is none (app.request() without one).
function executionContextOf(c) {
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  }
}

/**
 * rateLimit returns a Hono middleware limiting the requests it sees. Options are validated here; an
 * invalid one throws a SluiceConfigError naming it.
 */
export function rateLimit(options) {
  const { settings, evaluate } = createEngine(options, "hono");
  const { onLimited } = settings;
  return async function rateLimit(c, next) {
    const decision = await evaluate([c], c.env, executionContextOf(c));
    if (decision.skipped) return next();
    c.set("rateLimit", decision);
    const headers = responseHeaders(decision, settings);
    if (!decision.allowed) {
      const custom = onLimited === undefined ? undefined : await onLimited(c, decision);
      if (custom === undefined) return limitedResponse(decision, settings);
      // A denial is about this client at this moment: no cache may replay it, unless onLimited says so.
      return withHeaders(custom, custom.headers.has("cache-control") ? headers : [...headers, ["cache-control", "no-store"]]);
    }
    await next();
    // A decision other than ours means a limiter further in (a stricter one on this route) has headed
    // the response, or denied it: stack our fields on its own.
    const response = withHeaders(c.res, headers, c.get("rateLimit") !== decision);
    if (response !== c.res) c.res = response;
  };
}
