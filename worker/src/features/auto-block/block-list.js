// The isolate's list of the blocks it started or met. The blocks themselves live in the store (the
// strikes rule's state, in the core); this list only remembers which keys they were, since a store
// cannot be asked for its blocked keys. The Durable Object and Redis stores also keep the deployment's
// list (stores/block-list-table.js), which the isolate notes each block new to it in; the admin API
// lists both. Bounded: past `max` entries the one ending
// first is forgotten (its block goes on; lift() still reaches it by its key).

/**
 * createBlockList returns a list of at most `max` blocks, by rule name and key.
 * @param {number} max
 */
export function createBlockList(max) {
  // unshared: the store's list of blocks does not hold it (no such list, a key too long, a failed note).
  /** @type {Map<string, { rule: string, key: string, untilMs: number, unshared: boolean }>} */
  const entries = new Map();
  /** @param {string} rule @param {string} key */
  const id = (rule, key) => `${rule}\u0000${key}`;

  /** Forgets the blocks that ended by `nowMs`. @param {number} nowMs */
  function prune(nowMs) {
    for (const [name, entry] of entries) if (entry.untilMs <= nowMs) entries.delete(name);
  }

  return {
    /**
     * add records a block of `key` until `untilMs` (a block the list holds already stays as it is);
     * returns whether the block is new to the list.
     * @param {string} rule @param {string} key
     * @param {number} untilMs @param {number} nowMs
     * @returns {boolean}
     */
    add(rule, key, untilMs, nowMs) {
      const known = entries.get(id(rule, key));
      if (known !== undefined && known.untilMs > nowMs) return false;
      if (entries.size >= max) prune(nowMs);
      if (entries.size >= max) {
        const first = [...entries].reduce((a, b) => (b[1].untilMs < a[1].untilMs ? b : a));
        entries.delete(first[0]);
      }
      entries.set(id(rule, key), { rule, key, untilMs, unshared: true });
      return true;
    },
    /** shared marks the block of `key` as held by the store's list too. @param {string} rule @param {string} key */
    shared(rule, key) {
      const entry = entries.get(id(rule, key));
      if (entry !== undefined) entry.unshared = false;
    },
    /** remove forgets the block of `key`. @param {string} rule @param {string} key */
    remove(rule, key) {
      entries.delete(id(rule, key));
    },
    /**
     * live lists the blocks that have not ended at `nowMs`, ending soonest first; with `unsharedOnly`,
     * only those the store's list does not hold.
     * @param {number} nowMs @param {boolean} [unsharedOnly]
     * @returns {Array<{ rule: string, key: string, untilMs: number }>}
     */
    live(nowMs, unsharedOnly = false) {
      prune(nowMs);
      return [...entries.values()]
        .filter((entry) => !unsharedOnly || entry.unshared)
        .map(({ rule, key, untilMs }) => ({ rule, key, untilMs }))
        .sort((a, b) => a.untilMs - b.untilMs);
    },
  };
}

/** @typedef {ReturnType<typeof createBlockList>} BlockList */
