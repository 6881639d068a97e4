// The last value this isolate saw of each Redis key (its view: the state, then its log, if any): what
// its next compare-and-set on the key expects. And the keys it saw contended (another isolate wrote
// since its last call): those go in the key's log (redis-append-step.js). Both bounded (least recently
// used dropped): clients choose how many keys exist.

/**
 * StateCache maps a Redis key to the last value seen ("" for absent), least recently used first.
 */
export class StateCache {
  /** @type {Map<string, string>} */
  #values = new Map();
  /** @type {Set<string>} */
  #contended = new Set();
  #maxKeys;

  /** @param {number} maxKeys */
  constructor(maxKeys) {
    this.#maxKeys = maxKeys;
  }

  /** @param {string} key @returns {string} the last value seen, "" if none (a key never seen is taken as absent) */
  get(key) {
    return this.#values.get(key) ?? "";
  }

  /** @param {string} key @param {string} value */
  remember(key, value) {
    this.#values.delete(key);
    this.#values.set(key, value);
    if (this.#values.size > this.#maxKeys) {
      const oldest = this.#values.keys().next();
      if (!oldest.done) this.#values.delete(oldest.value);
    }
  }

  /** @param {string} key */
  forget(key) {
    this.#values.delete(key);
    this.#contended.delete(key);
  }

  /** @param {string} key another isolate wrote it since this one's last call */
  markContended(key) {
    this.#contended.delete(key);
    this.#contended.add(key);
    if (this.#contended.size > this.#maxKeys) this.#contended.delete(/** @type {string} */ (this.#contended.values().next().value));
  }

  /** @param {string} key @returns {boolean} */
  isContended(key) {
    return this.#contended.has(key);
  }
}
