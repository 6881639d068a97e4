// accessList(): allow and deny lists as Hono middleware. A request on the deny list gets a 403 and the
// handler does not run; the match is c.get("accessList"), so a rate limit further in can let the allow
// list through: rateLimit({ ..., skip: (c) => c.get("accessList")?.list === "allow" }).
import { createAccessList } from "./access-list.js";

/** @import { Env, MiddlewareHandler } from "hono" */
/** @import { AccessListOptions } from "./access-list.js" */

/**
 * accessList returns a middleware refusing (403) the requests `options.deny` names and marking those
 * `options.allow` names. Options are validated here: a bad one throws a SluiceConfigError naming it.
 * @template {Env} [E=Env]
 * @param {AccessListOptions} options
 * @returns {MiddlewareHandler<E>}
 */
export function accessList(options) {
  const list = createAccessList(options);
  return async function accessListMiddleware(c, next) {
    const matched = list.match(c);
    c.set("accessList", matched);
    if (matched.list === "deny") {
      return Response.json({ error: "forbidden", code: "access_denied" }, { status: 403, headers: { "cache-control": "no-store" } });
    }
    await next();
  };
}
