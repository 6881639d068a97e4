// The concurrency engine every surface shares (the Hono middleware and createConcurrencyLimiter): per
// request, `skip`, the key and cost, a holder id, one acquisition; then a Lease that the surface
// releases when the response ends.
import { resolveKeyText, storeKey } from "../../http/keys.js";
import { Lease, holdUntilDone, newHolder } from "./lease.js";
import { normalizeConcurrencyOptions } from "./options.js";
import { createConcurrencyStore } from "./stores.js";

/** @import { ConcurrencyOptions } from "./options.js" */
/** @import { ExecutionContextLike } from "./stores.js" */

/**
 * @typedef {object} ConcurrencyDecision
 * @property {boolean} allowed whether the request holds its units
 * @property {number} limit the most units held at once (max)
 * @property {number} remaining units still free after this request
 * @property {number} retryAfterMs when refused: until enough leases would run out if nobody released
 * @property {number} resetMs until every lease of the key would run out if nobody renewed
 * @property {"memory"|"durable"|"none"} store what counted (none: nothing could, failMode decided)
 * @property {string} [key] the key the units are held under
 */

/**
 * What acquire answers: skipped (`skip` said not to count this request), refused (with the
 * decision), or allowed with the decision and the held units (`lease`).
 * @typedef {{ allowed: true, skipped: true, decision?: undefined, lease?: undefined }
 *   | { allowed: false, skipped: false, decision: ConcurrencyDecision, lease?: undefined }
 *   | { allowed: true, skipped: false, decision: ConcurrencyDecision, lease: Lease }} Acquisition
 */

/** @type {Acquisition} */
const SKIPPED = Object.freeze({ allowed: true, skipped: true });

/** createConcurrencyEngine validates `options` and returns { settings, counters, acquire, hold, limitedResponse }. @param {ConcurrencyOptions} options */
export function createConcurrencyEngine(options) {
  const settings = normalizeConcurrencyOptions(options);
  const store = createConcurrencyStore(settings);

  /**
   * acquire counts one request; `args` are what key, cost and skip functions receive.
   * @param {readonly unknown[]} args
   * @param {unknown} env
   * @param {ExecutionContextLike | undefined} ctx
   * @returns {Promise<Acquisition>}
   */
  async function acquire(args, env, ctx) {
    if (settings.skip !== undefined && (await settings.skip(...args))) return SKIPPED;
    const key = await storeKey(await resolveKeyText(settings.key, args));
    const cost = typeof settings.cost === "number" ? settings.cost : await settings.cost(...args);
    if (!Number.isInteger(cost) || cost < 1 || cost > settings.rule.limit) {
      throw new TypeError(`sluice: concurrency cost() returned ${String(cost)}; it must be a whole number from 1 to max (${settings.rule.limit})`);
    }
    const holder = newHolder();
    const decision = await store.acquire(key, holder, cost, env, ctx);
    decision.key = key;
    if (!decision.allowed) return { allowed: false, skipped: false, decision };
    const lease = new Lease(store, decision, key, holder, settings.renewEveryMs, env, ctx);
    return { allowed: true, skipped: false, decision, lease };
  }

  /** limitedResponse is the refusal of a denied decision: the configured status, Retry-After, a JSON body. @param {ConcurrencyDecision} decision @returns {Response} */
  function limitedResponse(decision) {
    const seconds = settings.retryAfterSec ?? (Number.isFinite(decision.retryAfterMs) ? Math.max(1, Math.ceil(decision.retryAfterMs / 1000)) : null);
    /** @type {Record<string, string>} */
    const headers = { "content-type": "application/json", "cache-control": "no-store" };
    if (seconds !== null) headers["retry-after"] = String(seconds);
    const body = { error: "too many concurrent requests", code: settings.code, limit: decision.limit, retryAfter: seconds };
    return new Response(JSON.stringify(body), { status: settings.status, headers });
  }

  return {
    settings,
    counters: store.counters,
    acquire,
    /**
     * hold returns the response whose end (body read, cancelled or failed; socket closed) releases
     * `lease`; a held WebSocket's client messages go through the `messages` limiter, if any.
     * @param {Response} response
     * @param {Lease} lease
     * @returns {Response}
     */
    hold(response, lease) {
      if (settings.messages === null || response.status !== 101) return holdUntilDone(response, lease);
      const gate = settings.messages.connection(lease.key);
      return holdUntilDone(response, lease, { onClientMessage: (data, client) => gate.admit(client) });
    },
    limitedResponse,
  };
}
