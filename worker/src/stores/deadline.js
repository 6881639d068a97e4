// Bounding how long a store may take to answer.
import { SluiceConfigError, describe } from "../engine/errors.js";

/** DeadlineError is a store that did not answer in time. */
export class DeadlineError extends Error {
  /** @param {string} what @param {number} timeoutMs @param {Promise<unknown>} [late] */
  constructor(what, timeoutMs, late) {
    super(`${what} did not answer within ${timeoutMs} ms`);
    this.name = "DeadlineError";
    this.timeoutMs = timeoutMs;
    /** The call still under way: it may yet answer (late), or fail, or never settle. */
    this.late = late;
  }
}

/**
 * withDeadline settles like `work` (a promise or a plain value), or rejects with DeadlineError after
 * `timeoutMs`. The work is not cancelled (an RPC cannot be), so its late rejection is swallowed here
 * rather than surfacing as an unhandled rejection.
 * @template T
 * @param {T | PromiseLike<T>} work
 * @param {number} timeoutMs
 * @param {string} what
 * @returns {T | Promise<T>}
 */
export function withDeadline(work, timeoutMs, what) {
  // RPC calls return thenables (callable ones, for pipelining) that are not Promises: test for `then`.
  const thenable = work !== null && (typeof work === "object" || typeof work === "function") && typeof (/** @type {any} */ (work)).then === "function";
  if (!thenable) return /** @type {T} */ (work);
  if (timeoutMs === Infinity) return /** @type {Promise<T>} */ (work);
  const settled = Promise.resolve(work);
  settled.catch(() => {});
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** @type {Promise<never>} */
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(what, timeoutMs, settled)), timeoutMs);
  });
  return Promise.race([settled, expired]).finally(() => clearTimeout(/** @type {any} */ (timer)));
}

/**
 * checkTimeout validates a timeout option: a positive number of ms (Infinity: no deadline).
 * @param {unknown} value
 * @param {string} field
 * @returns {void}
 */
export function checkTimeout(value, field) {
  if (typeof value !== "number" || !(value > 0)) {
    throw new SluiceConfigError(field, `must be a positive number of milliseconds (Infinity: wait); got ${describe(value)}`);
  }
}
