// The local pre-filter: a key a remote store denied stays denied in this isolate, with no round trip,
// until the retry time that store gave has passed. A block (a rule with blockMs: blockSec rules and
// auto-blocking's strikes) can end early, lifted or reset from another isolate, so its denial is
// answered from memory for at most BLOCK_RECHECK_MS and then asked of the store again: a lift reaches
// every isolate within that time, and a blocked client costs a store call per isolate per period.
/** How long a block's denial is answered from this isolate's memory before the store is asked again. */
export const BLOCK_RECHECK_MS = 10_000;

/**
 * DenialCache remembers, per (rule, key), the latest denial and the cost it was denied for. It holds
 * at most `maxKeys` entries (expired ones go first, then the oldest), so clients cannot grow it.
 */
/** @import { Outcome, StoreCheck } from "./store.js" */

export class DenialCache {
  /** @type {Map<string, any>} */
  #entries = new Map();
  #maxKeys;

  /** @param {number} maxKeys */
  constructor(maxKeys) {
    this.#maxKeys = maxKeys;
  }

  /**
   * forget drops what it remembers of the (rule, key) of each check (they were reset).
   * @param {readonly StoreCheck[]} checks
   */
  forget(checks) {
    for (const check of checks) this.#entries.delete(entryId(check));
  }

  /** @type {number} */
  get size() {
    return this.#entries.size;
  }

  /**
   * remember records the checks a denied outcome denied. A denial that waiting cannot lift
   * (retryAfterMs Infinity: the cost exceeds what the rule holds) is not cached: a smaller cost may pass.
   * @param {readonly StoreCheck[]} checks
   * @param {Outcome} outcome
   * @param {number} nowMs
   * @returns {void}
   */
  remember(checks, outcome, nowMs) {
    if (outcome.allowed) return;
    for (let i = 0; i < checks.length; i++) {
      const decision = outcome.checks[i];
      if (decision === null || decision.allowed || !(decision.retryAfterMs > 0) || decision.retryAfterMs === Infinity) continue;
      const id = entryId(checks[i]);
      this.#entries.delete(id); // re-inserted last: the Map's order is the eviction order
      if (this.#entries.size >= this.#maxKeys) this.#makeRoom(nowMs);
      const blocks = (checks[i].rule.blockMs ?? 0) > 0;
      this.#entries.set(id, {
        untilMs: nowMs + decision.retryAfterMs,
        // When to ask the store again (a block may be lifted elsewhere); the retry time stays the store's.
        recheckMs: nowMs + (blocks ? Math.min(decision.retryAfterMs, BLOCK_RECHECK_MS) : decision.retryAfterMs),
        atMs: nowMs,
        cost: checks[i].cost,
        decision,
        store: outcome.store,
      });
    }
  }

  /**
   * lookup returns a denied Outcome if a check's key is still denied for at least this cost, else null.
   * The outcome has `preFiltered: true`; `checks` holds the cached decision for the denying check and
   * null for the checks that were not consulted.
   * @param {readonly StoreCheck[]} checks
   * @param {number} nowMs
   * @returns {Outcome | null}
   */
  lookup(checks, nowMs) {
    for (let i = 0; i < checks.length; i++) {
      const id = entryId(checks[i]);
      const entry = this.#entries.get(id);
      if (entry === undefined) continue;
      if (nowMs >= entry.recheckMs || nowMs < entry.atMs) {
        this.#entries.delete(id);
        continue;
      }
      if (checks[i].cost < entry.cost) continue; // a smaller request may fit
      return deniedOutcome(checks.length, i, entry, nowMs);
    }
    return null;
  }

  /** @param {number} nowMs */
  #makeRoom(nowMs) {
    for (const [id, entry] of this.#entries) {
      if (nowMs >= entry.recheckMs) this.#entries.delete(id);
    }
    if (this.#entries.size >= this.#maxKeys) this.#entries.delete(/** @type {string} */ (this.#entries.keys().next().value));
  }
}

/** @param {StoreCheck} check @returns {string} */
function entryId(check) {
  return `${check.rule.id}\u0000${check.key}`;
}

// The cached decision, moved forward to now: the remote store's durations minus the time elapsed since.
/**
 * @param {number} count @param {number} index @param {any} entry @param {number} nowMs
 * @returns {Outcome}
 */
function deniedOutcome(count, index, entry, nowMs) {
  const elapsedMs = nowMs - entry.atMs;
  const decision = {
    allowed: false,
    limit: entry.decision.limit,
    remaining: entry.decision.remaining,
    resetMs: Math.max(0, entry.decision.resetMs - elapsedMs),
    retryAfterMs: entry.untilMs - nowMs,
  };
  const checks = new Array(count).fill(null);
  checks[index] = decision;
  return { ...decision, decidingCheck: index, checks, store: entry.store, preFiltered: true };
}
