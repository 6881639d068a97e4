// Where a concurrency limit counts its holders: the isolate's own instance ("memory"), or one Durable
// Object per key ("durable", exact across isolates), with the isolate's memory as the fallback when the
// object fails, then failMode. A holder is released and renewed in the store that acquired it.
//
// This module does not import the object's class (nor cloudflare:workers); the object's side is
// SluiceDurableObject.concurrency (stores/durable-object.js).
import { SluiceConfigError } from "../../engine/errors.js";
import { concurrencyInIsolate } from "../../engine/isolate.js";
import { isBound, resolveBinding } from "../../stores/binding.js";
import { withDeadline } from "../../stores/deadline.js";

/** @import { ConcurrencyDecision } from "./engine.js" */
/** @import { SluiceDurableObject } from "../../stores/durable-object.js" */
/** @typedef {ReturnType<typeof import("./options.js").normalizeConcurrencyOptions>} ConcurrencySettings */
/** @typedef {"acquire" | "release" | "renew"} ConcurrencyOp */
/** @typedef {{ waitUntil?: (promise: Promise<unknown>) => void }} ExecutionContextLike */
/** What createConcurrencyStore returns. @typedef {ReturnType<typeof createConcurrencyStore>} ConcurrencyStore */

/**
 * createConcurrencyStore returns { acquire, release, renew, counters } for normalized `settings`.
 * acquire(key, holder, cost, env, ctx) resolves to the core's decision with `store`: "durable",
 * "memory", or "none" when nothing could count and failMode decided (allowed: failMode === "open").
 * @param {ConcurrencySettings} settings
 */
export function createConcurrencyStore(settings) {
  const { rule, store, binding, timeoutMs, fallback, failMode, clock } = settings;
  const counters = {
    /** Operations the Durable Object failed or did not answer in time. */
    durableFailures: 0,
    /** Acquisitions decided by the isolate's memory because the object failed. */
    fellBack: 0,
    /** Acquisitions nothing could decide, admitted (failMode "open") or refused ("closed"). */
    failedOpen: 0,
    failedClosed: 0,
    /** Releases and renewals that failed (the holder's lease then runs out on its own). */
    lostUpdates: 0,
    /** Open holders whose renewal found their lease already gone (the isolate stalled past leaseSec). */
    leasesLost: 0,
  };

  /** @param {ConcurrencyOp} op @param {string} key @param {number} holder @param {number} cost @returns {ConcurrencyDecision} */
  const inMemory = (op, key, holder, cost) => concurrencyInIsolate(op, rule, key, holder, cost, Math.floor(clock()));

  /** @param {string} key @param {unknown} env */
  function object(key, env) {
    const namespace = /** @type {DurableObjectNamespace<SluiceDurableObject>} */ (resolveBinding(binding, env, "concurrency store binding"));
    // One object per key: a key's holders are counted in one place, and keys spread over objects.
    return namespace.get(namespace.idFromName(`sluice/concurrency/${rule.id}/${key}`));
  }

  /** @param {ConcurrencyOp} op @param {string} key @param {number} holder @param {number} cost @param {unknown} env @returns {Promise<ConcurrencyDecision>} */
  async function inObject(op, key, holder, cost, env) {
    const decision = await withDeadline(object(key, env).concurrency(op, { rule, key, holder, cost }), timeoutMs, "the Durable Object");
    /** @type {ConcurrencyDecision} */ (decision).store = "durable";
    return /** @type {ConcurrencyDecision} */ (decision);
  }

  /** @param {ExecutionContextLike | undefined} ctx @param {string} key @param {number} holder @param {unknown} env */
  function failed(ctx, key, holder, env) {
    // The object may have taken the units before failing or timing out: give them back, best effort,
    // so they do not wait out the lease.
    const cleanup = inObject("release", key, holder, 1, env).catch(() => {});
    if (ctx !== undefined && typeof ctx.waitUntil === "function") ctx.waitUntil(cleanup);
  }

  // A binding env lacks is a deployment mistake, not an outage: falling back for it would count in each
  // isolate's memory (N isolates admitting N x max), and failMode "open" would admit everyone. So it
  // fails every acquisition, naming the field; a binding that is present but fails still falls back.
  /** @param {unknown} env */
  function checkBound(env) {
    if (!isBound(binding, env)) {
      throw new SluiceConfigError(
        "binding",
        `names ${JSON.stringify(binding)}, which env does not have: declare it in wrangler.toml ([[durable_objects.bindings]]), or choose store 'memory'`,
      );
    }
  }

  /** @param {string} key @param {number} holder @param {number} cost @param {unknown} env @param {ExecutionContextLike | undefined} ctx @returns {Promise<ConcurrencyDecision>} */
  async function acquire(key, holder, cost, env, ctx) {
    if (store === "memory") return inMemory("acquire", key, holder, cost);
    checkBound(env);
    try {
      return await inObject("acquire", key, holder, cost, env);
    } catch {
      counters.durableFailures++;
      failed(ctx, key, holder, env);
    }
    if (fallback) {
      counters.fellBack++;
      return inMemory("acquire", key, holder, cost);
    }
    if (failMode === "open") counters.failedOpen++;
    else counters.failedClosed++;
    return { allowed: failMode === "open", limit: rule.limit, remaining: 0, resetMs: 0, retryAfterMs: 0, store: "none" };
  }

  // Release and renew never throw: a failure is counted, and the lease runs out on its own.
  /** @param {"release" | "renew"} op @param {ConcurrencyDecision["store"]} where @param {string} key @param {number} holder @param {unknown} env @returns {Promise<ConcurrencyDecision | null>} */
  async function update(op, where, key, holder, env) {
    if (where === "none") return null;
    try {
      return where === "memory" ? inMemory(op, key, holder, 1) : await inObject(op, key, holder, 1, env);
    } catch {
      counters.lostUpdates++;
      if (where === "durable") counters.durableFailures++;
      return null;
    }
  }

  return {
    counters,
    acquire,
    release: (/** @type {ConcurrencyDecision["store"]} */ where, /** @type {string} */ key, /** @type {number} */ holder, /** @type {unknown} */ env) => update("release", where, key, holder, env),
    renew: (/** @type {ConcurrencyDecision["store"]} */ where, /** @type {string} */ key, /** @type {number} */ holder, /** @type {unknown} */ env) => update("renew", where, key, holder, env),
  };
}
