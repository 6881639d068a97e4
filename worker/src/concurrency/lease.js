// A held concurrency slot: renewed while the work is open, released exactly once when it ends
// (response body finished, cancelled or failed; WebSocket closed; handler threw).
import { relayWebSocket } from "../websocket/relay.js";

/** newHolder picks a random holder id (never 0, the core's anonymous holder). */
export function newHolder() {
  const words = new Uint32Array(1);
  do crypto.getRandomValues(words);
  while (words[0] === 0);
  return words[0];
}

function waitUntil(ctx, promise) {
  if (ctx !== undefined && ctx !== null && typeof ctx.waitUntil === "function") ctx.waitUntil(promise);
}

/**
 * Lease is one holder's units of one key, in the store that acquired them. Its heartbeat renews them
 * every `renewEveryMs` until release(); a renewal the store refuses (the lease ran out: the isolate
 * stalled longer than the lease) stops the heartbeat and is counted as lost.
 */
export class Lease {
  #store;
  #env;
  /** @type {ReturnType<typeof setInterval> | null} */
  #timer = null;
  #released = null;
  #resolveDone;

  constructor(store, decision, key, holder, renewEveryMs, env, ctx) {
    this.#store = store;
    this.#env = env;
    this.where = decision.store;
    this.key = key;
    this.holder = holder;
    this.renewals = 0;
    this.lost = false;
    /** Settles when the lease has been released (the runtime keeps the request alive until then). */
    this.done = new Promise((resolve) => {
      this.#resolveDone = resolve;
    });
    waitUntil(ctx, this.done);
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

  /** release gives the units back, once; later calls return the same promise. Never rejects. */
  release() {
    if (this.#released === null) {
      this.#stopHeartbeat();
      this.#released = this.#store.release(this.where, this.key, this.holder, this.#env).then(
        () => this.#resolveDone(),
        () => this.#resolveDone(),
      );
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
