// The isolate's list of the blocks it started or met: what the admin API lists. The blocks themselves
// live in the store (the strikes rule's state, in the core); this list only remembers which keys they
// were, since a store cannot be asked for its blocked keys. Bounded: past `max` entries the one ending
// first is forgotten (its block goes on; lift() still reaches it by its key).

/**
 * createBlockList returns a list of at most `max` blocks, by rule name and key.
 * @param {number} max
 */
export function createBlockList(max) {
  /** @type {Map<string, { rule: string, key: string, untilMs: number }>} */
  const entries = new Map();
  /** @param {string} rule @param {string} key */
  const id = (rule, key) => `${rule}\u0000${key}`;

  /** Forgets the blocks that ended by `nowMs`. @param {number} nowMs */
  function prune(nowMs) {
    for (const [name, entry] of entries) if (entry.untilMs <= nowMs) entries.delete(name);
  }

  return {
    /**
     * add records a block of `key` until `untilMs` (a block the list holds already stays as it is).
     * @param {string} rule @param {string} key
     * @param {number} untilMs @param {number} nowMs
     */
    add(rule, key, untilMs, nowMs) {
      const known = entries.get(id(rule, key));
      if (known !== undefined && known.untilMs > nowMs) return;
      if (entries.size >= max) prune(nowMs);
      if (entries.size >= max) {
        const first = [...entries].reduce((a, b) => (b[1].untilMs < a[1].untilMs ? b : a));
        entries.delete(first[0]);
      }
      entries.set(id(rule, key), { rule, key, untilMs });
    },
    /** remove forgets the block of `key`. @param {string} rule @param {string} key */
    remove(rule, key) {
      entries.delete(id(rule, key));
    },
    /** live lists the blocks that have not ended at `nowMs`, ending soonest first. @param {number} nowMs */
    live(nowMs) {
      prune(nowMs);
      return [...entries.values()].map((entry) => ({ ...entry })).sort((a, b) => a.untilMs - b.untilMs);
    },
  };
}

/** @typedef {ReturnType<typeof createBlockList>} BlockList */
