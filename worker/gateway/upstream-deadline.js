// One timer per upstream call, for its head and, when the body is read whole in one runtime step,
// for that read too (proxy.js, response-body.js). Its expiry aborts the fetch's AbortController: before
// the head, fetch() rejects (504); after it, workerd errors the body, so a pending arrayBuffer() rejects
// ("an upstream that trickles a small body slower than bodyTimeoutMs is cut", gateway-whole-body.test.js).
//
// One timer, not one per phase: moving the deadline later (the body's is usually later than the
// head's) costs a clock reading, and the timer, when it fires early, sleeps for the rest. Two timers
// and a silence watchdog cost a small request 15-35 us more (bench/gateway-cpu.js, "small").

/** The phase a deadline ran out in. */
export const Expired = Object.freeze({ HEAD: "head", BODY: "body" });

/**
 * UpstreamDeadline calls `onExpire()` once, `timeoutMs` after it was made (the head's bound), or at
 * the time `body(ms)` moved it to; `stop()` ends it for good. `expired` says in which phase it ran
 * out (null while it has not).
 */
export class UpstreamDeadline {
  #onExpire;
  #at; // when it runs out (Date.now() time)
  #firesAt; // when the pending timer fires
  /** @type {ReturnType<typeof setTimeout> | null} */
  #timer;
  /** @type {string} */
  #phase = Expired.HEAD;
  /** @type {string | null} */
  expired = null;
  /** @type {(() => void) | null} */
  #onBodyExpire = null;

  /** @param {number} timeoutMs @param {() => void} onExpire */
  constructor(timeoutMs, onExpire) {
    this.#onExpire = onExpire;
    this.#at = Date.now() + timeoutMs;
    this.#firesAt = this.#at;
    this.#timer = setTimeout(() => this.#check(), timeoutMs);
  }

  /**
   * body moves the deadline to `timeoutMs` from now, for the whole read of the body; `onExpire`, when
   * given, is also called if it runs out then (the reader of the body calls stop() at its end).
   * @param {number} timeoutMs @param {(() => void) | null} [onExpire]
   */
  body(timeoutMs, onExpire = null) {
    if (this.#timer === null) return;
    this.#phase = Expired.BODY;
    this.#onBodyExpire = onExpire;
    this.#at = Date.now() + timeoutMs;
    // A timer that would fire after the new deadline is set again; one that fires before it sleeps on.
    if (this.#firesAt > this.#at) {
      clearTimeout(this.#timer);
      this.#arm(timeoutMs);
    }
  }

  stop() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** @param {number} ms */
  #arm(ms) {
    this.#firesAt = Date.now() + ms;
    this.#timer = setTimeout(() => this.#check(), ms);
  }

  #check() {
    this.#timer = null;
    const left = this.#at - Date.now();
    if (left > 0) {
      this.#arm(left);
      return;
    }
    this.expired = this.#phase;
    this.#onExpire();
    if (this.#phase === Expired.BODY) this.#onBodyExpire?.();
  }
}
