// A held concurrency slot: renewed while the work is open, released exactly once when it ends
// (response body finished, cancelled or failed; WebSocket closed; handler threw).
import { relayWebSocket } from "../websocket/relay.js";

/** @import { ConcurrencyDecision } from "./engine.js" */
/** @import { ConcurrencyStore, ExecutionContextLike } from "./stores.js" */

// Holder ids are drawn 64 at a time: one getRandomValues call per request was a measurable part of
// the middleware's cost (figure 8), and a batch is as random as single draws.
const holderIds = new Uint32Array(64);
let nextHolderId = holderIds.length;

/** newHolder picks a random holder id (never 0, the core's anonymous holder). */
export function newHolder() {
  for (;;) {
    if (nextHolderId === holderIds.length) {
      crypto.getRandomValues(holderIds);
      nextHolderId = 0;
    }
    const id = holderIds[nextHolderId++];
    if (id !== 0) return id;
  }
}

/** @param {ExecutionContextLike | undefined} ctx @param {Promise<unknown>} promise */
function waitUntil(ctx, promise) {
  if (ctx !== undefined && ctx !== null && typeof ctx.waitUntil === "function") ctx.waitUntil(promise);
}

/**
 * Lease is one holder's units of one key, in the store that acquired them. Its heartbeat renews them
 * every `renewEveryMs` until release(); a renewal the store refuses (the lease ran out: the isolate
 * stalled longer than the lease) stops the heartbeat and is counted as lost.
 *
 * The heartbeat is one timer per lease, started at acquisition: a handler may work for longer than
 * leaseSec before it answers. (One timer per isolate would not do: in workerd a timer belongs to the
 * request that set it and stops with it, while other requests' holders are still open.)
 */
export class Lease {
  #store;
  #env;
  #ctx;
  #keptOpen = false;
  /** @type {ReturnType<typeof setInterval> | null} */
  #timer = null;
  /** @type {Promise<void> | null} */
  #released = null;
  // Replaced in the constructor by the promise's resolve (its executor runs at once).
  /** @type {(value?: unknown) => void} */
  #resolveDone = () => {};

  /** @param {ConcurrencyStore} store @param {ConcurrencyDecision} decision @param {string} key @param {number} holder @param {number} renewEveryMs @param {unknown} env @param {ExecutionContextLike | undefined} ctx */
  constructor(store, decision, key, holder, renewEveryMs, env, ctx) {
    this.#store = store;
    this.#env = env;
    this.#ctx = ctx;
    this.where = decision.store;
    this.key = key;
    this.holder = holder;
    this.renewals = 0;
    this.lost = false;
    /** Settles when the lease has been released (see keepRequestOpen). */
    this.done = new Promise((resolve) => {
      this.#resolveDone = resolve;
    });
    if (this.where !== "none") {
      const timer = setInterval(() => this.#renew(), renewEveryMs);
      // Under Node (tests, app.request()) an open lease must not keep the process alive.
      const unref = /** @type {{ unref?: () => void }} */ (/** @type {unknown} */ (timer)).unref;
      if (typeof unref === "function") unref.call(timer);
      this.#timer = timer;
    }
  }

  get released() {
    return this.#released !== null;
  }

  async #renew() {
    if (this.#released !== null) return;
    const decision = await this.#store.renew(this.where, this.key, this.holder, this.#env);
    if (decision === null || this.#released !== null) return;
    this.renewals++;
    if (!decision.allowed) {
      this.lost = true;
      this.#store.counters.leasesLost++;
      this.#stopHeartbeat();
    }
  }

  #stopHeartbeat() {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /**
   * keepRequestOpen asks the runtime (ctx.waitUntil) to keep the request alive until the lease has been
   * released, so that its heartbeat and its release still run after the response has been returned.
   * Called when the lease outlives the handler (hold(), a lease handed to the caller); a lease released
   * before the response needs it only for a release that is an RPC. Once per lease.
   */
  keepRequestOpen() {
    if (this.#keptOpen) return;
    this.#keptOpen = true;
    waitUntil(this.#ctx, this.done);
  }

  /** release gives the units back, once; later calls return the same promise. Never rejects. */
  release() {
    if (this.#released === null) {
      this.#stopHeartbeat();
      this.#released = this.#store.release(this.where, this.key, this.holder, this.#env).then(
        () => this.#resolveDone(),
        () => this.#resolveDone(),
      );
      // The memory store releases before release() returns; the object's release is a round trip
      // that must not be cut off when the response completes.
      if (this.where === "durable") this.keepRequestOpen();
    }
    return this.#released;
  }
}

/**
 * holdUntilDone returns `response` (or an equivalent one) whose end releases `lease`: a 101 WebSocket
 * upgrade when the socket closes, a streamed body when it is fully read, cancelled or fails, and a
 * response without a body at once. `relayHooks` (message limits) apply to a relayed socket.
 * @param {Response} response
 * @param {Lease} lease
 * @param {import("../websocket/relay.js").RelayHooks} [relayHooks]
 * @returns {Response}
 */
export function holdUntilDone(response, lease, relayHooks = {}) {
  if (response.status === 101 && response.webSocket) {
    lease.keepRequestOpen();
    const client = relayWebSocket(response.webSocket, {
      ...relayHooks,
      onClose(code, reason) {
        lease.release();
        if (relayHooks.onClose !== undefined) relayHooks.onClose(code, reason);
      },
    });
    return new Response(null, { status: 101, statusText: response.statusText, headers: response.headers, webSocket: client });
  }
  if (response.body === null) {
    lease.release();
    return response;
  }
  lease.keepRequestOpen();
  const reader = response.body.getReader();
  const body = new ReadableStream({
    async pull(controller) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (error) {
        lease.release();
        controller.error(error);
        return;
      }
      if (chunk.done) {
        lease.release();
        controller.close();
      } else {
        controller.enqueue(chunk.value);
      }
    },
    cancel(reason) {
      lease.release();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
