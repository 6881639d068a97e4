// The last value this isolate saw of each Redis key: what its next compare-and-set on the key expects.
// Bounded (least recently used dropped): clients choose how many keys exist.

/**
 * StateCache maps a Redis key to the last value seen ("" for absent), least recently used first.
 */
export class StateCache {
  /** @type {Map<string, string>} */
  #values = new Map();
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
  }
}
