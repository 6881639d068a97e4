// The writes of script calls the Redis store gave up waiting for.
//
// A call that does not answer in time is given up: its requests fail, and the fallback chain decides
// them. But the call was sent and may still reach Redis and write: Redis would then count requests a
// fallback answered. The answered decision wins, so such a write is taken back. Each write the store
// makes carries a tag of its own (redis.js: `<state>.<tag>`), so a given-up write is never mistaken for
// another's, and it is taken back:
//  - by this isolate's next call on the key, when the key still holds it: that call decides on the state
//    the write replaced, as if the given-up call had never landed, and replaces the write (no extra
//    round trip);
//  - when the late answer says the call was applied and no later call took its write back: by one
//    compare-and-set restoring what it replaced, if the key still holds it.
// A write another isolate built on before either happened stays (the key then counts requests a
// fallback decided: it errs towards denying) and is counted as missed.

/**
 * A write of a given-up call: the key's value it wrote, and the value it replaced ("" for absent).
 * @typedef {{ key: string, written: string, replaced: string }} GivenUpWrite
 */

// A key rarely has more than one given-up write outstanding; the oldest beyond this are forgotten.
const WRITES_PER_KEY = 4;

/**
 * GivenUpWrites remembers, per Redis key, the writes of given-up calls that may still be in Redis.
 */
export class GivenUpWrites {
  /** @type {Map<string, GivenUpWrite[]>} */
  #byKey = new Map();
  #maxKeys;

  /** @param {number} maxKeys The most keys remembered (the least recently given up on go first). */
  constructor(maxKeys) {
    this.#maxKeys = maxKeys;
  }

  /**
   * record remembers the writes of a call just given up on.
   * @param {readonly GivenUpWrite[]} writes
   */
  record(writes) {
    for (const write of writes) {
      const list = this.#byKey.get(write.key) ?? [];
      this.#byKey.delete(write.key);
      list.push(write);
      if (list.length > WRITES_PER_KEY) list.shift();
      this.#byKey.set(write.key, list);
      if (this.#byKey.size > this.#maxKeys) this.#byKey.delete(/** @type {string} */ (this.#byKey.keys().next().value));
    }
  }

  /**
   * written reports the given-up write that `value` (what Redis holds at `key`) is, or null.
   * @param {string} key
   * @param {string} value
   * @returns {GivenUpWrite | null}
   */
  written(key, value) {
    if (value === "") return null;
    return this.#byKey.get(key)?.find((write) => write.written === value) ?? null;
  }

  /**
   * forget drops a write: taken back, known not to have landed, or past help.
   * @param {GivenUpWrite} write
   */
  forget(write) {
    const list = this.#byKey.get(write.key);
    if (list === undefined) return;
    const at = list.indexOf(write);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.#byKey.delete(write.key);
  }

  /**
   * outstanding reports whether `write` is still remembered (no call took it back yet).
   * @param {GivenUpWrite} write
   */
  outstanding(write) {
    return this.#byKey.get(write.key)?.includes(write) === true;
  }
}
