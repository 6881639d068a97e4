// The Redis store's decisions, taken in the isolate by the C++ core: a batch of requests on the same
// keys, decided one after the other (each all-or-nothing) on the states a compare-and-set will expect,
// in a scratch core that is emptied again after every decision. Redis never does arithmetic; this is
// where the store's window maths happens, and only in the core.
//
// With leases (leases.js, redis-leases.js) a request first gives back units, then is decided, then
// borrows units once admitted (a refill borrows without deciding): the core's giveBack and lend, on the
// same states, in the same call.
import { fromBase64, parseEntry, splitView, stateOf, toBase64 } from "./redis-values.js";
import { RuleCore } from "./rule-core.js";
import { LENDING_ALGORITHMS, SluiceError, Status, WINDOW_LENDING_ALGORITHMS } from "../../../wasm-bindings/sluice.js";

/** @import { NormalizedRule, Outcome, StoreCheck, WaitUntilContext } from "./store.js" */
/** @import { RedisKeys } from "./redis-keys.js" */
/** @import { SluiceCore } from "../../../wasm-bindings/sluice.js" */
/** @import { EntryRequest } from "./redis-values.js" */
/**
 * What one request asks of a script call: its checks; with leases (leases.js), units to give back
 * first and units to borrow once admitted (a refill borrows without deciding anything).
 * @typedef {{
 *   checks: readonly StoreCheck[],
 *   peek: boolean,
 *   lend?: { wanted: number[], leaseMs: number },
 *   giveBack?: ReadonlyArray<{ rule: NormalizedRule, key: string, units: number, expiresAtMs: number }>,
 *   refill?: boolean,
 * }} Asked
 */
/**
 * One request waiting for a script call, and how to answer it.
 * @typedef {Asked & {
 *   ctx: WaitUntilContext | undefined,
 *   resolve: (outcome: any) => void,
 *   reject: (error: unknown) => void,
 * }} Waiting
 */
/**
 * What one script call decides: each request's outcome (or the error the core threw for it), each
 * key's new state ("" for none) and when it expires, and whether it folds a log (then it is written
 * even if "": a key whose log is folded always gets a new tagged value).
 * @typedef {{ results: Array<Outcome | Error>, next: string[], expiresAtMs: number[], folded: boolean[] }} Decided
 */
/** @typedef {{ index: number, key: string, rule: NormalizedRule }} Slot one Redis key's rule index, key and rule in the scratch core */

// The scratch core holds one call's keys (at most 16) and is emptied after every decision.
const SCRATCH_KEYS_PER_RULE = 64;

/**
 * BatchDecider decides batches in its scratch core.
 */
export class BatchDecider {
  #rules = new RuleCore((rule) => ({
    algorithm: rule.algorithm,
    limit: rule.limit,
    windowMs: rule.windowMs,
    burst: rule.burst,
    blockMs: rule.blockMs ?? 0,
    keyCapacity: SCRATCH_KEYS_PER_RULE,
  }));
  #names;
  #clockToleranceMs;

  /** @param {RedisKeys} names @param {number} clockToleranceMs */
  constructor(names, clockToleranceMs) {
    this.#names = names;
    this.#clockToleranceMs = clockToleranceMs;
  }

  /**
   * decide decides every request of `batch` in order, each all-or-nothing, on `basis` (each key's
   * view: its value, then the log entries to replay on it) at `atMs`. A lease ends here `marginMs`
   * before it ends on Redis's clock. `first` names the slots (default: the batch's first request).
   * @param {readonly Asked[]} batch
   * @param {readonly string[]} keys the batch's Redis keys, sorted
   * @param {readonly string[]} basis
   * @param {number} atMs
   * @param {number} marginMs
   * @param {Asked} [first]
   * @returns {Decided}
   */
  decide(batch, keys, basis, atMs, marginMs, first = batch[0]) {
    const core = this.#rules.core;
    const slots = this.#slotsOf(first, keys);
    const indices = slots.map((slot) => slot.index);
    const evictionsBefore = evictions(core, indices);
    try {
      const logged = slots.map((slot, u) => this.#load(core, slot, basis[u], marginMs));
      /** @type {Array<Outcome | Error>} */
      const results = batch.map((request) => this.#decideOrError(core, request, atMs, marginMs));
      if (evictions(core, indices) !== evictionsBefore) throw new Error("redis store: a call's keys overflowed the scratch key table");
      return { results, ...this.#exportStates(core, slots, basis, logged, atMs) };
    } finally {
      for (const slot of slots) core.reset(slot.index, slot.key);
    }
  }

  /**
   * Loads a key's view into the scratch core: its state, then its log replayed, each entry's requests
   * decided at the entry's time exactly as the isolate that appended it decided them.
   * @param {SluiceCore} core
   * @param {Slot} slot
   * @param {string} view
   * @param {number} marginMs
   * @returns {boolean} whether the view had a log
   */
  #load(core, slot, view, marginMs) {
    const { value, log } = splitView(view);
    core.reset(slot.index, slot.key);
    const state = stateOf(value);
    if (state !== "") importOrForget(core, slot.index, slot.key, state);
    for (const entry of log) {
      const { atMs, requests } = parseEntry(entry);
      for (const request of requests) this.#decideOrError(core, askedOf(request, slot), atMs, marginMs);
    }
    return log.length > 0;
  }

  /**
   * Every request of a batch has the same (rule, key) pairs: the first one's name the slots.
   * @param {Asked} first
   * @param {readonly string[]} keys
   * @returns {Slot[]}
   */
  #slotsOf(first, keys) {
    const pairs = pairsOf(first);
    const indices = this.#rules.indicesOf(pairs);
    /** @type {Slot[]} */
    const slots = new Array(keys.length);
    for (let i = 0; i < pairs.length; i++) {
      const u = keys.indexOf(this.#names.stateKeyOf(pairs[i]));
      slots[u] ??= { index: indices[i], key: pairs[i].key, rule: pairs[i].rule };
    }
    return slots;
  }

  /**
   * Each key's new value ("" if unchanged: denials and peeks write nothing, unless the key had a log,
   * which the new state folds in) and its expiry: back to full quota by the core's word (lent units
   * included), and never sooner than two windows (a sliding counter still weighs the previous window
   * after the current one turns).
   * @param {SluiceCore} core
   * @param {readonly Slot[]} slots
   * @param {readonly string[]} basis
   * @param {boolean[]} logged which keys had a log
   * @param {number} atMs
   * @returns {{ next: string[], expiresAtMs: number[], folded: boolean[] }}
   */
  #exportStates(core, slots, basis, logged, atMs) {
    const next = new Array(slots.length).fill("");
    const expiresAtMs = new Array(slots.length).fill(0);
    for (let u = 0; u < slots.length; u++) {
      const resetMs = core.peek(slots[u].index, slots[u].key, 1, atMs).resetMs;
      expiresAtMs[u] = atMs + Math.max(resetMs, 2 * slots[u].rule.windowMs) + this.#clockToleranceMs;
      const bytes = core.exportState(slots[u].index, slots[u].key);
      if (bytes === null) continue;
      const encoded = toBase64(bytes);
      if (logged[u] || encoded !== stateOf(splitView(basis[u]).value)) next[u] = encoded;
    }
    return { next, expiresAtMs, folded: logged };
  }

  /**
   * @param {SluiceCore} core
   * @param {Asked} request
   * @param {number} atMs
   * @param {number} marginMs
   * @returns {Outcome | Error}
   */
  #decideOrError(core, request, atMs, marginMs) {
    try {
      return /** @type {Outcome} */ (this.#decideOne(core, request, atMs, marginMs));
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  /**
   * One request on the scratch core: give back, decide (unless a refill), lend.
   * @param {SluiceCore} core
   * @param {Asked} request
   * @param {number} atMs
   * @param {number} marginMs
   * @returns {object} the Outcome (with `leases` and `returned` when asked), or a refill's answer
   */
  #decideOne(core, request, atMs, marginMs) {
    const { checks } = request;
    const pairIndices = this.#rules.indicesOf(pairsOf(request)); // the batch's rules: no new core
    const returned = request.giveBack?.map((back, j) =>
      LENDING_ALGORITHMS.includes(back.rule.algorithm) ? core.giveBack(pairIndices[checks.length + j], back.key, back.units, back.expiresAtMs) : 0,
    );
    const outcome = request.refill
      ? null
      : core.checkAll(checks.map((c, i) => ({ rule: pairIndices[i], key: c.key, cost: c.cost })), atMs, { peek: request.peek });
    const lends = request.lend !== undefined && !request.peek && (outcome === null || outcome.allowed);
    const leases = lends ? lendAll(core, checks, pairIndices, /** @type {NonNullable<Asked["lend"]>} */ (request.lend), atMs, marginMs) : undefined;
    if (outcome === null) {
      const resetMs = checks.map((c, i) => core.peek(pairIndices[i], c.key, 1, atMs).resetMs);
      return { leases: leases ?? checks.map(() => null), returned: returned ?? null, resetMs };
    }
    return { ...outcome, ...(leases === undefined ? {} : { leases }), ...(returned === undefined ? {} : { returned }) };
  }
}

/**
 * Lends each check's wanted units (once per (rule, key), lending algorithms only): a lease too short
 * to use is none (its units lapse with it).
 * @param {SluiceCore} core
 * @param {readonly StoreCheck[]} checks
 * @param {readonly number[]} pairIndices
 * @param {NonNullable<Asked["lend"]>} lend
 * @param {number} atMs
 * @param {number} marginMs
 * @returns {Array<object | null>}
 */
function lendAll(core, checks, pairIndices, { wanted, leaseMs }, atMs, marginMs) {
  return checks.map((check, i) => {
    const units = wanted?.[i] ?? 0;
    const repeat = checks.findIndex((c) => c.rule.id === check.rule.id && c.key === check.key) !== i;
    if (!(units > 0) || repeat || !LENDING_ALGORITHMS.includes(check.rule.algorithm)) return null;
    const lease = core.lend(pairIndices[i], check.key, units, leaseMs, atMs);
    const validForMs = lease.expiresAtMs - atMs - marginMs;
    if (lease.units === 0 || validForMs <= 0) return null;
    const endsWithWindow = WINDOW_LENDING_ALGORITHMS.includes(check.rule.algorithm) && lease.expiresAtMs < atMs + leaseMs;
    return { ...lease, validForMs, endsWithWindow };
  });
}

/**
 * askedOf turns a log entry's request back into the request, on the key the log belongs to.
 * @param {EntryRequest} request
 * @param {Slot} slot
 * @returns {Asked}
 */
function askedOf(request, { rule, key }) {
  /** @type {Asked} */
  const asked = { checks: [{ rule, key, cost: request.c }], peek: request.p === 1 };
  if (request.r === 1) asked.refill = true;
  if (request.l !== undefined) asked.lend = { wanted: [request.l[0]], leaseMs: request.l[1] };
  if (request.g !== undefined) asked.giveBack = request.g.map(([units, expiresAtMs]) => ({ rule, key, units, expiresAtMs }));
  return asked;
}

/**
 * entryRequestOf is how a log entry holds a request (appendable ones only).
 * @param {Asked} request
 * @returns {EntryRequest}
 */
export function entryRequestOf({ checks, peek, refill, lend, giveBack }) {
  /** @type {EntryRequest} */
  const entry = { c: checks[0].cost };
  if (peek) entry.p = 1;
  if (refill) entry.r = 1;
  if (lend !== undefined) entry.l = [lend.wanted?.[0] ?? 0, lend.leaseMs];
  if (giveBack !== undefined) entry.g = giveBack.map((back) => [back.units, back.expiresAtMs]);
  return entry;
}

/**
 * appendable reports whether a batch can go in a key's log: each request has one check, and gives
 * units back (if any) to that same (rule, key) only; and not only peeks (a peek changes nothing: a
 * compare-and-set answers it without growing the log).
 * @param {readonly Asked[]} batch
 * @returns {boolean}
 */
export function appendable(batch) {
  return !batch.every((request) => request.peek) && batch.every(
    ({ checks, giveBack }) =>
      checks.length === 1 && (giveBack === undefined || giveBack.every((back) => back.rule.id === checks[0].rule.id && back.key === checks[0].key)),
  );
}

/**
 * pairsOf is the (rule, key) pairs a request touches: its checks', then those it gives units back to.
 * @param {Asked} request
 * @returns {Array<{ rule: NormalizedRule, key: string }>}
 */
export function pairsOf(request) {
  return request.giveBack === undefined ? [...request.checks] : [...request.checks, ...request.giveBack];
}

/**
 * asAsked is what a waiting request asked, without how to answer it (kept for a take-back's recomputation).
 * @param {Asked} request
 * @returns {Asked}
 */
export function asAsked({ checks, peek, lend, giveBack, refill }) {
  return { checks, peek, ...(lend === undefined ? {} : { lend }), ...(giveBack === undefined ? {} : { giveBack }), ...(refill === undefined ? {} : { refill }) };
}

/**
 * A state another core format (or anything else) wrote is unreadable: the key starts over rather than
 * failing every request until it expires.
 * @param {SluiceCore} core
 * @param {number} index
 * @param {string} key
 * @param {string} state base64
 */
function importOrForget(core, index, key, state) {
  /** @type {Uint8Array | undefined} */
  let bytes;
  try {
    bytes = fromBase64(state);
    core.importState(index, key, bytes);
  } catch (error) {
    if (bytes !== undefined && !(error instanceof SluiceError && error.status === Status.INVALID_STATE)) throw error;
    core.reset(index, key);
  }
}

/**
 * @param {SluiceCore} core
 * @param {number[]} indices
 */
function evictions(core, indices) {
  let total = 0;
  for (let i = 0; i < indices.length; i++) if (indices.indexOf(indices[i]) === i) total += core.stats(indices[i]).evictions;
  return total;
}
