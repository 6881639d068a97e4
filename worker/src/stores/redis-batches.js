// How the Redis store's requests of one isolate take turns on their keys, and go together.
//
// One script call per key is in flight from an isolate at a time (an isolate must not race itself for
// a key). The requests that arrive on the same keys while a call is out do not each wait for a call of
// their own: they join one batch, which is sent as soon as the call ahead of it answers, and the core
// decides every request of the batch in order on the states that call returns. So a burst of N
// requests on a hot key costs two script calls in the isolate, not N, and no request waits in the
// isolate for more than the call ahead of it (the store's timeout starts when its own call is sent:
// time spent waiting here is not the store's slowness).
//
// A batch holds requests with exactly the same Redis keys (the same rules and keys, in any order); a
// request on other keys, even overlapping ones, starts a batch of its own and waits its turn on the
// keys. A call takes its place in the queue of every one of its keys at once, so calls wait only on
// calls that queued before them, and two calls cannot wait on each other.

/**
 * KeyTurns queues an isolate's script calls per Redis key, and groups the requests that wait on the
 * same keys into one batch.
 * @template R
 */
export class KeyTurns {
  /** @type {Map<string, Promise<void>>} Redis key -> the tail of the queue of this isolate's calls on it */
  #tails = new Map();
  /** @type {Map<string, { requests: R[], release: () => void }>} the keys' id -> the batch that waits for its turn on them */
  #open = new Map();
  #maxBatch;
  #maxHoldMs;
  /** Turns taken because the call ahead held the keys longer than maxHoldMs. */
  overdue = 0;

  /**
   * @param {number} maxBatch The most requests one batch holds (the next ones start another batch).
   * @param {() => number} maxHoldMs How long a call may hold its keys before the next one goes anyway:
   *   in workerd a call whose request was cancelled never lets go, and the key must not stay stuck.
   *   Going anyway is safe (every write is a compare-and-set); it only lets the isolate race itself.
   */
  constructor(maxBatch, maxHoldMs) {
    this.#maxBatch = maxBatch;
    this.#maxHoldMs = maxHoldMs;
  }

  /**
   * join adds `request` to the batch waiting on `keys` (sorted, each once), or starts one: `run` is
   * called once per batch, with its requests in the order they joined, when no earlier call of this
   * isolate holds any of the keys. `run` must call `release` (letting the next call on the keys go)
   * before it settles any request of the batch, and settle every one.
   *
   * Why before: in workerd a promise belongs to the request that made it, and a request that has
   * answered can run nothing more. Released after the last request of the batch answered, the next
   * batch would never start.
   * @param {readonly string[]} keys
   * @param {R} request
   * @param {(requests: R[], release: () => void) => Promise<void>} run
   */
  join(keys, request, run) {
    const id = keys.join("\n");
    let batch = this.#open.get(id);
    if (batch === undefined || batch.requests.length >= this.#maxBatch) {
      /** @type {{ requests: R[], release: () => void }} */
      const fresh = { requests: [], release: () => {} };
      batch = fresh;
      this.#open.set(id, fresh);
      fresh.release = this.#when(keys, (release) => {
        if (this.#open.get(id) === fresh) this.#open.delete(id); // closed: later requests start the next batch
        return fresh.requests.length === 0 ? Promise.resolve(release()) : run(fresh.requests, release);
      });
    }
    batch.requests.push(request);
  }

  /**
   * absorb takes, for a call on `keys` that must be sent again (refused), the requests of the batch
   * waiting behind it on the same keys, if together they fit in one batch: they are decided in that
   * call, after its own. Returns them and the function that lets the calls behind the absorbed batch
   * go (call it when the absorbing call lets go of the keys), or null.
   * @param {readonly string[]} keys
   * @param {number} size how many requests the absorbing call holds
   * @returns {{ requests: R[], release: () => void } | null}
   */
  absorb(keys, size) {
    const id = keys.join("\n");
    const batch = this.#open.get(id);
    if (batch === undefined || batch.requests.length === 0 || size + batch.requests.length > this.#maxBatch) return null;
    this.#open.delete(id);
    const requests = batch.requests;
    batch.requests = [];
    return { requests, release: batch.release };
  }

  /**
   * turn waits for this isolate's earlier calls on `keys` (sorted, each once), then runs `work`; the
   * next call on any of the keys waits for it to settle. Resolves or rejects as `work` does.
   * @template T
   * @param {readonly string[]} keys
   * @param {() => Promise<T>} work
   * @returns {Promise<T>}
   */
  turn(keys, work) {
    return new Promise((resolve, reject) =>
      this.#when(keys, (release) =>
        work().then(
          (value) => {
            release();
            resolve(value);
          },
          (error) => {
            release();
            reject(error);
          },
        ),
      ),
    );
  }

  /**
   * Queues `work` behind the calls ahead on `keys`; returns its release (idempotent).
   * @param {readonly string[]} keys
   * @param {(release: () => void) => Promise<void>} work calls release before it settles anything
   * @returns {() => void}
   */
  #when(keys, work) {
    /** @type {() => void} */
    let resolveMine = () => {};
    /** @type {Promise<void>} */
    const mine = new Promise((resolve) => (resolveMine = resolve));
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const key of keys) if (this.#tails.get(key) === mine) this.#tails.delete(key);
      resolveMine();
    };
    /** @type {Promise<void>[]} */
    const ahead = [];
    for (const key of keys) {
      const previous = this.#tails.get(key);
      if (previous !== undefined) ahead.push(previous);
      this.#tails.set(key, mine);
    }
    // Every key's tail is taken at once (synchronously), so waiting on all of them cannot deadlock.
    this.#waitFor(ahead)
      .then(() => work(release))
      .catch(() => {})
      .finally(release);
    return release;
  }

  /**
   * Resolves when every call ahead has let go, or after maxHoldMs.
   * @param {Promise<void>[]} ahead
   * @returns {Promise<void>}
   */
  #waitFor(ahead) {
    if (ahead.length === 0) return Promise.resolve();
    const limitMs = this.#maxHoldMs();
    if (!(limitMs < Infinity)) return Promise.all(ahead).then(() => {});
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    const overdue = new Promise((resolve) => {
      timer = setTimeout(() => {
        this.overdue++;
        resolve(undefined);
      }, limitMs);
    });
    return Promise.race([Promise.all(ahead), overdue]).then(() => clearTimeout(/** @type {any} */ (timer)));
  }
}

/**
 * One batch under way: its keys, its requests (growing with absorbed ones), and the releases that let
 * this isolate's next calls on the keys go.
 * @template R
 * @typedef {{ keys: readonly string[], batch: R[], releases: Array<() => void> }} BatchUnderWay
 */

/**
 * releaseAll lets this isolate's next calls on the batch's keys go (before any request is answered).
 * @param {BatchUnderWay<unknown>} under
 */
export function releaseAll(under) {
  for (const release of under.releases) release();
}

/**
 * contextOf is the context a batch's calls run in: its first request's that has one.
 * @template {{ ctx?: import("./store.js").WaitUntilContext }} R
 * @param {BatchUnderWay<R>} under
 */
export function contextOf(under) {
  return under.batch.find((request) => request.ctx !== undefined)?.ctx;
}
