// A circuit breaker for one store of the fallback chain (each store has its own). While a store (the
// Durable Object, KV) is down, asking it anyway makes every request wait the whole timeout before the
// next store decides; after `failures` failures in a row the breaker opens and the chain goes straight
// past that store for `cooldownMs`. Then one request (the probe) asks it again: an answer closes the
// breaker, a failure opens it for another cooldown. Requests arriving while the probe is out skip it.
import { SluiceConfigError, describe } from "../engine/errors.js";

/**
 * @typedef {object} BreakerOptions
 * @property {number} [failures] Primary failures (errors or timeouts) in a row that open the breaker. Default 5.
 * @property {number} [cooldownMs] How long the breaker stays open before one request probes the primary. Default 10000.
 */

/**
 * The breaker's settings by default: open after 5 failures in a row, for 10 s.
 * @type {Readonly<Required<BreakerOptions>>}
 */
export const DEFAULT_BREAKER = Object.freeze({ failures: 5, cooldownMs: 10_000 });

/**
 * checkBreakerOptions validates `breaker` (`false` turns the breaker off; an object may set failures
 * and cooldownMs) and returns the settings, or null when off. Throws SluiceConfigError naming the field.
 * @param {BreakerOptions | boolean | undefined} breaker
 * @returns {Readonly<Required<BreakerOptions>> | null}
 */
export function checkBreakerOptions(breaker) {

  if (breaker === false) return null;
  if (breaker === true || breaker === undefined) return DEFAULT_BREAKER;
  if (breaker === null || typeof breaker !== "object" || Array.isArray(breaker)) {
    throw new SluiceConfigError("breaker", `must be false or an object { failures, cooldownMs }; got ${describe(breaker)}`);
  }
  const { failures = DEFAULT_BREAKER.failures, cooldownMs = DEFAULT_BREAKER.cooldownMs, ...rest } = breaker;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new SluiceConfigError(`breaker.${unknown[0]}`, "is not a breaker setting (failures, cooldownMs)");
  if (!Number.isInteger(failures) || failures < 1) {
    throw new SluiceConfigError("breaker.failures", `must be a whole number >= 1; got ${describe(failures)}`);
  }
  if (typeof cooldownMs !== "number" || !(cooldownMs > 0) || cooldownMs === Infinity) {
    throw new SluiceConfigError("breaker.cooldownMs", `must be a finite number of milliseconds > 0; got ${describe(cooldownMs)}`);
  }
  return Object.freeze({ failures, cooldownMs });
}

/**
 * CircuitBreaker tracks one store's consecutive failures. Times are the caller's clock (ms), so tests
 * drive it without waiting.
 */
export class CircuitBreaker {
  #failures;
  #cooldownMs;
  #consecutive = 0;
  #open = false;
  #openUntilMs = -Infinity;
  #probing = false;

  /** @param {Readonly<Required<BreakerOptions>>} settings */
  constructor({ failures, cooldownMs }) {
    this.#failures = failures;
    this.#cooldownMs = cooldownMs;
  }

  /**
   * admit reports whether a request at `nowMs` may ask the store: "closed" (yes), "probe" (yes: the
   * one request after a cooldown; report its result) or "open" (no: use the fallbacks).
   * @param {number} nowMs
   * @returns {"closed" | "probe" | "open"}
   */
  admit(nowMs) {
    if (!this.#open) return "closed";
    if (this.#probing || nowMs < this.#openUntilMs) return "open";
    this.#probing = true;
    return "probe";
  }

  /** succeeded: the store answered (a probe, or a call made before the breaker opened). */
  succeeded() {
    this.#consecutive = 0;
    this.#open = false;
    this.#probing = false;
  }

  /**
   * failed: the store threw or timed out at `nowMs`; `probe` says whether this call was admitted as
   * the probe. Returns true when this failure opened the breaker
   * (the failures reached the limit, or a probe failed); calls made before it opened and failing late
   * neither reopen it nor extend its cooldown.
   * @param {number} nowMs
   * @param {boolean} probe
   * @returns {boolean}
   */
  failed(nowMs, probe) {
    if (probe) this.#probing = false;
    this.#consecutive++;
    if (this.#consecutive < this.#failures || (this.#open && !probe)) return false;
    this.#open = true;
    this.#openUntilMs = nowMs + this.#cooldownMs;
    return true;
  }

  /** The reason a request skipped the store, for its outcome and the log. @type {string} */
  get reason() {
    return `circuit open after ${this.#consecutive} failures in a row`;
  }
}
