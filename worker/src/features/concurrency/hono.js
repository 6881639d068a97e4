// concurrency(): the Hono middleware limiting how many requests of a key are open at once.
//
//   app.get("/reports/*", concurrency({ key: user((c) => c.get("userId")), max: 2, leaseSec: 60 }));
//
// The units are acquired before the handler runs (a refusal, 429 by default, comes before any work)
// and released when the response ends: its body fully sent, cancelled or failed, the WebSocket of a
// 101 closed, or at once when the handler throws or answers with content it built in full (a string or
// bytes through c.text, c.json, c.html or c.body). The decision is c.get("concurrency").
import { createConcurrencyEngine } from "./engine.js";
import { executionContextOf } from "../../engine/execution-context.js";

/** @import { Context, Env, MiddlewareHandler } from "hono" */
/** @import { ConcurrencyDecision } from "./engine.js" */
/** @import { ConcurrencyCommonOptions } from "./options.js" */

/** Context methods whose response carries content the handler already built in full. */
const CONTENT_BUILDERS = /** @type {const} */ (["body", "text", "json", "html"]);

/** isBuiltContent: a body of a string or bytes (not a stream, not a promise) is complete when passed. @param {unknown} data @returns {boolean} */
function isBuiltContent(data) {
  return typeof data === "string" || data instanceof ArrayBuffer || ArrayBuffer.isView(data);
}

/**
 * watchBuiltContent makes `c`'s content builders remember the last response they built from content
 * given in full; returns a function telling whether `response` is one of them. Watching the builders is
 * what spares such responses the stream that detects a body's end (figure 8: that stream was most of the
 * middleware's cost per request).
 * @param {Context} c
 * @returns {(response: Response) => boolean}
 */
function watchBuiltContent(c) {
  /** @type {unknown} */
  let built = null;
  const target = /** @type {Record<string, (...args: unknown[]) => unknown>} */ (/** @type {unknown} */ (c));
  for (const name of CONTENT_BUILDERS) {
    const build = target[name];
    if (typeof build !== "function") continue;
    target[name] = (...args) => {
      const response = build(...args);
      // c.json stringifies whatever it gets; the others pass their first argument on as the body.
      if (name === "json" || isBuiltContent(args[0])) built = response;
      return response;
    };
  }
  return (response) => response === built;
}

/**
 * concurrency returns a Hono middleware; options are validated here (a SluiceConfigError names the
 * field). See docs/concurrency.md. `onLimited(c, decision)` builds the refusal (undefined: the default).
 * @template {Env} [E=Env]
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
    const isBuilt = watchBuiltContent(c);
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
    // Content the handler built in full (and no later middleware replaced): the work it holds the slot
    // for is over; only the bytes' transfer is left, which the slot does not protect.
    if (c.res.status !== 101 && isBuilt(c.res)) {
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
