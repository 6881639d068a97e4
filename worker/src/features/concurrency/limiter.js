// createConcurrencyLimiter: the concurrency limit for a plain fetch handler (no framework).
//
//   const reports = createConcurrencyLimiter({ key: ip(), max: 2, leaseSec: 60 });
//   export default { fetch: (request, env, ctx) => reports.handle(request, env, ctx, renderReport) };
//
// Key, cost and skip functions receive (request, env, ctx).
import { createConcurrencyEngine } from "./engine.js";

/** @import { ConcurrencyDecision } from "./engine.js" */
/** @import { ConcurrencyCommonOptions } from "./options.js" */

/**
 * createConcurrencyLimiter validates `options` (a SluiceConfigError names the field) and returns
 * { acquire, hold, limitedResponse, handle, counters }. `onLimited(request, decision)` builds the
 * refusal (undefined: the default).
 * @param {ConcurrencyCommonOptions<[request: Request, env: any, ctx: any]> & { onLimited?: (request: Request, decision: ConcurrencyDecision) => Response | undefined | Promise<Response | undefined> }} options
 */
export function createConcurrencyLimiter(options) {
  const engine = createConcurrencyEngine(options);
  const { onLimited } = engine.settings;

  /**
   * handle runs `handler(request, env, ctx)` holding the request's units: a refusal (429 by default)
   * before it runs; the units are released when its response ends, or at once if it throws.
   */
  /**
   * @param {Request} request
   * @param {any} env
   * @param {any} ctx
   * @param {(request: Request, env: any, ctx: any) => Response | Promise<Response>} handler
   * @returns {Promise<Response>}
   */
  async function handle(request, env, ctx, handler) {
    const acquisition = await engine.acquire([request, env, ctx], env, ctx);
    if (acquisition.skipped) return handler(request, env, ctx);
    if (!acquisition.allowed) {
      const custom = onLimited === undefined ? undefined : await onLimited(request, acquisition.decision);
      return custom ?? engine.limitedResponse(acquisition.decision);
    }
    let response;
    try {
      response = await handler(request, env, ctx);
    } catch (error) {
      acquisition.lease?.release();
      throw error;
    }
    return engine.hold(response, /** @type {import("./lease.js").Lease} */ (acquisition.lease));
  }

  return Object.freeze({
    /** acquire counts `request`; when allowed, release acquisition.lease yourself, or pass the response to hold(). */
    // The caller may release after its response has gone: the request stays open until it does.
    acquire: async (/** @type {Request} */ request, /** @type {any} */ env, /** @type {any} */ ctx) => {
      const acquisition = await engine.acquire([request, env, ctx], env, ctx);
      acquisition.lease?.keepRequestOpen();
      return acquisition;
    },
    hold: engine.hold,
    limitedResponse: engine.limitedResponse,
    handle,
    counters: engine.counters,
  });
}
