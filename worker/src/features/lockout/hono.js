// The account-lockout middleware for Hono (exported from sluice/hono as `lockout`):
//
//   app.post("/login", lockout({ key: jsonField("username") }), handler);
//
// Before the handler, a locked account (or account and client) gets a 429 with Retry-After and the
// handler does not run; after it, the response's status (or c.get("lockout").fail() / .succeed() from
// the handler) says whether the attempt failed. The attempt is c.get("lockout").
import { createLockoutEngine } from "./lockout.js";
import { executionContextOf } from "../../engine/execution-context.js";

/** @import { Context, Env, MiddlewareHandler } from "hono" */

/**
 * lockout returns a Hono middleware refusing attempts on a locked account and counting failed ones.
 * Options are validated here; an invalid one throws a SluiceConfigError naming it (docs/lockout.md).
 * @template {Env} [E=Env]
 * @param {import("./options.js").LockoutOptions<[c: Context<E>]>} options
 * @returns {MiddlewareHandler<E>}
 */
export function lockout(options) {
  const engine = createLockoutEngine(options);
  /** @type {MiddlewareHandler<E>} */
  return async function lockout(c, next) {
    const attempt = await engine.check([c], c.env, executionContextOf(c));
    c.set("lockout", attempt);
    if (!attempt.allowed) return engine.refusedResponse(attempt);
    await next();
    // Counted before the response leaves: the next attempt, wherever it lands, sees this one.
    await engine.settle(attempt, c.res.status);
  };
}
