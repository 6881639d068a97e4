// concurrency(): the Hono middleware limiting how many requests of a key are open at once.
//
//   app.get("/reports/*", concurrency({ key: user((c) => c.get("userId")), max: 2, leaseSec: 60 }));
//
// The units are acquired before the handler runs (a refusal, 429 by default, comes before any work)
// and released when the response ends: its body fully sent, cancelled or failed, the WebSocket of a
// 101 closed, or at once when the handler throws. The decision is c.get("concurrency").
import { createConcurrencyEngine } from "./engine.js";
import { executionContextOf } from "../execution-context.js";

/** @import { Context, Env, MiddlewareHandler } from "hono" */
/** @import { ConcurrencyDecision } from "./engine.js" */
/** @import { ConcurrencyCommonOptions } from "./options.js" */

/**
 * concurrency returns a Hono middleware; options are validated here (a SluiceConfigError names the
 * field). See docs/concurrency.md. `onLimited(c, decision)` builds the refusal (undefined: the default).
 * @template {Env} [E=any]
 * @param {ConcurrencyCommonOptions<[c: Context<E>]> & { onLimited?: (c: Context<E>, decision: ConcurrencyDecision) => Response | undefined | Promise<Response | undefined> }} options
 * @returns {MiddlewareHandler<E> & { counters: Readonly<Record<string, number>> }} the middleware, with the
 *   store's counters (durable failures, fallbacks, failMode decisions, lost updates and leases)
 */
export function concurrency(options) {
  const engine = createConcurrencyEngine(options);
  const { onLimited } = engine.settings;
  /** @type {MiddlewareHandler<E>} */
  const middleware = async function concurrency(c, next) {
    const ctx = executionContextOf(c);
    const acquisition = await engine.acquire([c], c.env, ctx);
    if (acquisition.skipped) return next();
    c.set("concurrency", acquisition.decision);
    if (!acquisition.allowed) {
      const custom = onLimited === undefined ? undefined : await onLimited(c, acquisition.decision);
      return custom ?? engine.limitedResponse(acquisition.decision);
    }
    const lease = /** @type {import("./lease.js").Lease} */ (acquisition.lease);
    try {
      await next();
    } catch (error) {
      lease.release();
      throw error;
    }
    // Hono turns a handler's exception into the error handler's response (c.error is set): the work
    // is over, whatever that response is.
    if (c.error !== undefined) {
      lease.release();
      return;
    }
    const held = engine.hold(c.res, lease);
    if (held !== c.res) {
      // Replace rather than merge: c.res = would copy the old response's headers onto a 101's.
      c.res = undefined;
      c.res = held;
    }
  };
  return Object.assign(middleware, { counters: engine.counters });
}
