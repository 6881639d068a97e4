// Script calls the Redis store gave up waiting for, and what their late answers mean.
//
// A call that does not answer in time is given up: each of its requests fails with a DeadlineError, and
// the fallback chain answers it otherwise (a fallback store, or failMode). But the call was sent, and
// may still land: Redis then charged those requests too. The answered decision wins (as for the Durable
// Object: chain.js reconciles late answers):
//  - each request's DeadlineError carries `late`, the promise of its own decision as the call would
//    apply it; it resolves once the call's answer comes (and rejects if the call failed);
//  - if the chain answered a request the call admitted with a denial, it asks the store to take that
//    charge back (redis.js takeBack): the store recomputes what the call would have written without it,
//    from the same states at the same instant, and sets that by compare-and-set, if the key still holds
//    the call's write. Every write carries a tag of its own, so no other write is mistaken for it.
//  - a request the call admitted and the chain admitted too stays charged: it was admitted, so it
//    counts against the limit everywhere.
// A call whose answer says it did not land (another isolate wrote first) charged nothing: its requests'
// late decisions are those it would have applied, and there is nothing to take back.

/**
 * A given-up call: what taking back one of its requests needs.
 * @typedef {object} GivenUpCall
 * @property {readonly string[]} keys Its Redis keys, sorted.
 * @property {readonly string[]} basis The values it decided on ("" for absent).
 * @property {ReadonlyArray<{ checks: readonly import("./store.js").StoreCheck[], peek: boolean }>} requests In order.
 * @property {number} atMs The instant it decided at (Redis's clock).
 * @property {string[]} values What it wrote to each key ("" nothing); after a take-back, what that wrote ("" deleted).
 * @property {readonly boolean[]} wrote Whether it wrote each key at all.
 * @property {readonly number[]} expiresAtMs When each written value expires.
 * @property {Set<number>} [takenBack] The requests taken back so far.
 * @property {Promise<boolean | null>} [applied] Whether it landed; null if its answer never said (it failed).
 */

/**
 * GivenUpCalls links the late outcomes handed to the fallback chain to the calls that made them, for
 * takeBack. Outcomes are held weakly: a chain that drops one forgets the call.
 */
export class GivenUpCalls {
  /** @type {WeakMap<object, { call: GivenUpCall, index: number }>} */
  #byOutcome = new WeakMap();
  /** @type {WeakSet<object>} late outcomes of requests appended to a key's log (redis-append-step.js) */
  #appended = new WeakSet();

  /**
   * appended records a late outcome whose charge went in a key's log: it cannot be taken back (entries
   * after it were decided on it), and takeBack counts it as missed.
   * @param {object} outcome
   */
  appended(outcome) {
    this.#appended.add(outcome);
  }

  /** @param {object} outcome @returns {boolean} whether its charge went in a key's log */
  wasAppended(outcome) {
    return this.#appended.has(outcome);
  }

  /**
   * giveUp records a call given up on; `answer` is the promise of its reply and `appliedOf(reply)` reads
   * whether it landed. Resolves when that is known (never rejects), with whether it landed.
   * @param {GivenUpCall} call
   * @param {Promise<unknown>} answer
   * @param {(reply: unknown) => boolean} appliedOf
   * @returns {Promise<boolean | null>}
   */
  giveUp(call, answer, appliedOf) {
    call.takenBack = new Set();
    call.applied = answer.then(
      (reply) => {
        try {
          return appliedOf(reply);
        } catch {
          return null; // a malformed reply says nothing
        }
      },
      () => null,
    );
    return call.applied;
  }

  /**
   * lateOutcome is the promise of request `index`'s late decision (`outcome`, as the call would apply
   * it): resolved when the call's answer comes, rejected if the call failed. A call that landed keeps
   * the outcome's link to it, for takeBack.
   * @template {object} O
   * @param {GivenUpCall} call
   * @param {number} index
   * @param {O} outcome
   * @returns {Promise<O>}
   */
  lateOutcome(call, index, outcome) {
    const late = /** @type {Promise<boolean | null>} */ (call.applied).then((applied) => {
      if (applied === null) throw new Error("redis: the call given up on failed");
      if (applied) this.#byOutcome.set(outcome, { call, index });
      return outcome;
    });
    late.catch(() => {}); // a chain that does not wait for late answers must not see an unhandled rejection
    return late;
  }

  /**
   * find returns the call that charged `outcome`'s request and its index, or null (not a late outcome
   * of a call that landed).
   * @param {object} outcome
   * @returns {{ call: GivenUpCall, index: number } | null}
   */
  find(outcome) {
    return this.#byOutcome.get(outcome) ?? null;
  }
}
