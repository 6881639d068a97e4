// The per-client statistics of one rule, in a table of at most `capacity` clients: the memory the
// replay needs does not grow with the log, only with the clients the table holds. When a new client
// arrives at a full table, one client is retired by the CLOCK policy (second chance: a client seen
// since the hand last passed it is spared once), and its record is handed to `retire`, which folds it
// into the rule's totals. Exact while the log has at most `capacity` distinct keys for the rule; past
// that, a client that comes back after being retired starts a new record, so it is counted twice in
// "clients" and its denials are split between its records (the report says how many were retired).

/**
 * One client's statistics. `peak` is the most cost units it sent in one of the rule's aligned windows
 * (the core's fixed-window count, see peak-probe.js); `limitedAt` is a bit mask of the --suggest
 * candidates that limited it at least once.
 * @typedef {{ key: string, requests: number, limited: number, peak: number, limitedAt: number, seen: boolean }} ClientRecord
 */

export class ClientTable {
  /**
   * @param {number} capacity
   * @param {(record: ClientRecord) => void} retire
   */
  constructor(capacity, retire) {
    this.capacity = capacity;
    this.retire = retire;
    /** @type {Map<string, ClientRecord>} */
    this.records = new Map();
    /** Records retired to make room (not counting the final flush). */
    this.evictions = 0;
  }

  /**
   * record returns the client's record, creating it (and retiring another when full).
   * @param {string} key
   * @returns {ClientRecord}
   */
  record(key) {
    let entry = this.records.get(key);
    if (entry !== undefined) {
      entry.seen = true;
      return entry;
    }
    if (this.records.size >= this.capacity) this.#evictOne();
    entry = { key, requests: 0, limited: 0, peak: 0, limitedAt: 0, seen: false };
    this.records.set(key, entry);
    return entry;
  }

  // The CLOCK hand is the Map's insertion order: a seen record moves to the back with its bit cleared.
  #evictOne() {
    for (const [key, entry] of this.records) {
      this.records.delete(key);
      if (entry.seen) {
        entry.seen = false;
        this.records.set(key, entry);
        continue;
      }
      this.evictions++;
      this.retire(entry);
      return;
    }
  }

  /** flush retires every record still held (at the end of the replay). */
  flush() {
    for (const entry of this.records.values()) this.retire(entry);
    this.records.clear();
  }
}
