// The Durable Object store: exact counting across every isolate and location.
//
// SluiceDurableObject runs the same wasm core as the isolates, and it is the only writer of its keys,
// so the core's own key table is the cache: a key's state is loaded from SQLite the first time the
// object sees it (after a start, or after the table evicted something), and from then on every call is
// decided in memory. Storage is written, never read, on the hot path: the keys a call charged are
// queued, and every call that arrives before the queue is flushed (a task later) shares one
// transaction, one row per key however many calls charged it. A call that charged answers only after
// that flush, so the runtime's output gate holds its answer until the write is durable: nothing
// admitted is acknowledged before it is stored, and a restarted object forgets nothing.
//
// Reservations: a write per batch of calls still costs a commit per batch, and a local disk that
// syncs each commit bounds an object near 8,000 calls/s. So for a warm key of a rule that can lend
// (fixed window, sliding counter), the object lends itself units the way it lends an isolate
// (leases.js, the core's lend): charged to the key in memory and written with the call that took
// them, then spent by later calls with nothing to write, since storage already counts them. A call
// that a reservation does not fully cover gives the key's reserved units back to the core first, so
// every decision sees the key's whole quota. After a restart the unspent reserved units stay counted
// until the key's window ends: a restart may strand at most one reservation per key (the key's rate
// over RESERVE_PERIOD_MS, at most a quarter of what it had left), and never forgets an admission.
//
// The Worker side, createDurableStore, is in durable.js; the leases it may take are in leases.js.
import { DurableObject } from "cloudflare:workers";
import { LENDING_ALGORITHMS, MAX_CHECKS_PER_CALL, SluiceError, Status, WINDOW_LENDING_ALGORITHMS } from "../../../wasm-bindings/sluice.js";
import { nowMs as wallClockMs } from "../engine/clock.js";
import { sameBytes } from "./bytes.js";
import { freshDemand, noteRequest, unitsWanted } from "./demand.js";
import { checkLeaseOptions } from "./leases.js";
import { RegionalLender } from "./regional-lender.js";
import { RuleCore } from "./rule-core.js";
import { SqlBlockList } from "./block-list-table.js";
import { durableStore } from "./kinds/durable.js";
import { registerStoreKind } from "./registry.js";

// A Worker that exports this class is the one store "durable" needs: let its options name it.
registerStoreKind(durableStore);

/** @import { Outcome } from "../../../wasm-bindings/sluice.js" */
/** @import { NormalizedRule, StoreCheck } from "./store.js" */
/** @import { SluiceCore } from "../../../wasm-bindings/sluice.js" */

/**
 * Takes back one charge of an undoable decide (a request spread over several objects, or one whose
 * answer came after its caller gave up). A charge the core took carries the key's state before and
 * after it (and the reservation it made, if any); a charge spent from a reservation carries the units
 * and the reservation's generation instead, and goes back to that reservation.
 * @typedef {object} UndoToken
 * @property {string} rule
 * @property {string} key
 * @property {ArrayBuffer | Uint8Array | null} [before]
 * @property {ArrayBuffer | Uint8Array} [after]
 * @property {number} [afterExpiresAtMs]
 * @property {{ units: number, generation: number }} [reservation] What the charge reserved (left unspent, it goes back with the charge).
 * @property {{ units: number, generation: number }} [reserved] A charge spent from a reservation: its units and the reservation's generation.
 */
/**
 * A lease lent with a decision (leases.js keeps it): units charged to the key, usable until
 * expiresAtMs on the object's clock, which is validForMs after the decision, and (lent ahead from the
 * key's next window: lease.hpp) not before startsAtMs, startsInMs after the decision.
 * @typedef {{ units: number, expiresAtMs: number, validForMs: number, startsAtMs: number, startsInMs: number, remaining: number, endsWithWindow: boolean }} Lease
 */
/**
 * Unused units of a lease, given back.
 * @typedef {{ rule: StoreCheck["rule"], key: string, units: number, expiresAtMs: number }} GiveBack
 */
/**
 * The object's answer: the core's Outcome, with `undo` when decide was called with `undoable` and
 * charged, `leases` when it was asked to lend, `returned` when units were given back.
 * @typedef {Outcome & { undo?: UndoToken[], leases?: (Lease | null)[], returned?: number[] }} ObjectOutcome
 */

// How many keys of a rule stay resident: a table of about RESIDENT_BYTES_PER_RULE (64 rules then fit
// the module's memory), between these bounds. Keys beyond it are evicted and reloaded from storage
// when they come back: correct, only slower.
const RESIDENT_BYTES_PER_RULE = 384 * 1024;
const MIN_RESIDENT_KEYS = 64;
const MAX_RESIDENT_KEYS = 16_384;
const SLOT_BYTES = 24; // KeyTable: a 64-bit tag and two 64-bit words per key

// The most units one lease may carry.
const MAX_LEASE_UNITS = 1 << 20;

// A flush waits for the object's next idle moment, or for this many calls waiting on it, whichever
// comes first.
const FLUSH_BATCH_CALLS = 8;

// Reservations (see the top of this file): sized to the key's rate over this period, at most this
// many units, for at most this many keys (the oldest is dropped beyond it, its units stranded).
const RESERVE_PERIOD_MS = 1000;
const MAX_RESERVE_UNITS = 1000;
const MAX_RESERVED_KEYS = 16_384;
// The most stores (binding, name, shards, lease settings) one regional object lends on for.
const MAX_REGIONAL_STORES = 64;
// Only the window algorithms reserve (WINDOW_LENDING_ALGORITHMS): a bucket's lease holds back the
// drain over the lease when the bucket is fuller than that (lease.hpp), and a sliding log's counts its
// units until the lease's end plus a window, which for the object's own calls would deny real requests.
const RESERVING_ALGORITHMS = WINDOW_LENDING_ALGORITHMS;

// Idle keys are swept by one alarm, no sooner than this after the previous sweep (never a timer per key).
const SWEEP_INTERVAL_MS = 60_000;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS sluice_keys (
    rule TEXT NOT NULL,          -- the normalized rule's stable id
    key TEXT NOT NULL,
    state BLOB NOT NULL,         -- the core's exportState bytes
    expires_at INTEGER NOT NULL, -- when the key is back to its full quota (ms since the epoch)
    PRIMARY KEY (rule, key)
  );
  CREATE INDEX IF NOT EXISTS sluice_keys_by_expiry ON sluice_keys (expires_at);
`;
const READ = "SELECT state FROM sluice_keys WHERE rule = ? AND key = ?";
const WRITE = `INSERT INTO sluice_keys (rule, key, state, expires_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (rule, key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at`;
const FORGET = "DELETE FROM sluice_keys WHERE rule = ? AND key = ?";
const SWEEP = "DELETE FROM sluice_keys WHERE expires_at <= ?";
const NEXT_EXPIRY = "SELECT MIN(expires_at) AS next FROM sluice_keys";

/** residentKeys is how many keys of `rule` the object keeps in memory. @param {NormalizedRule} rule @returns {number} */
function residentKeys(rule) {
  const bytesPerKey = SLOT_BYTES + (rule.algorithm === "sliding-log" ? 4 * rule.limit : 0);
  return Math.max(MIN_RESIDENT_KEYS, Math.min(MAX_RESIDENT_KEYS, Math.floor(RESIDENT_BYTES_PER_RULE / bytesPerKey)));
}

/**
 * SluiceDurableObject counts keys exactly. Export it from the Worker's main module and bind it with a
 * `new_sqlite_classes` migration (see docs/stores.md).
 *
 * Subclasses (a concurrency RPC, a test fixture) decide through the same steps the RPCs below use:
 * `this.resident(checks)` for the rule indices with every key loaded, the core itself (`this.core`),
 * then `this.persist(ruleId, key, index, expiresAtMs)` for every key they changed, and
 * `await this.flushed()` before answering.
 */
// The live table of overrides is a Durable Object too: exported from this entry, beside the counting one.
export { SluiceOverridesObject } from "../features/overrides/table-object.js";

export class SluiceDurableObject extends DurableObject {
  /** persistence false keeps nothing in storage (the bench's "from memory" object). */
  static persistence = true;

  #rules = new RuleCore((rule) => ({
    algorithm: rule.algorithm,
    limit: rule.limit,
    windowMs: rule.windowMs,
    burst: rule.burst,
    countDenied: rule.countDenied ?? false,
    blockMs: rule.blockMs ?? 0,
    keyCapacity: residentKeys(rule),
  }));
  /** @type {SqlStorage} */
  #sql;
  /** @type {boolean} */
  #persistent;
  // rule id -> the keys whose state the core holds as storage has it (or newer).
  /** @type {Map<string, Set<string>>} */
  #loaded = new Map();
  #loadedGeneration = -1;
  // rule id -> the core's eviction count when #loaded was last known good for that rule.
  /** @type {Map<string, number>} */
  #evictions = new Map();
  // "rule\nkey" -> the newest state not yet written; the flush writes them in one transaction.
  /** @type {Map<string, { rule: string, key: string, state: Uint8Array | ArrayBuffer | null, expiresAtMs: number }>} */
  #pending = new Map();
  /** @type {Promise<void> | null} */
  #flush = null;
  // The pending flush's run (null once it ran), and how many calls wait for it.
  /** @type {(() => void) | null} */
  #runFlush = null;
  #waiting = 0;
  // "rule\nkey" -> the key's demand and its reservation: units charged in memory and storage, not yet
  // spent; usable until expiresAtMs, once `ready` (the flush that stores them) has resolved.
  /** @type {Map<string, import("./demand.js").Demand & { units: number, expiresAtMs: number, ready: Promise<void> | null, generation: number }>} */
  #reserved = new Map();
  // Stores this object lends on for as a regional object (decideInRegion), by their settings.
  /** @type {Map<string, RegionalLender>} */
  #lenders = new Map();
  #counters = { calls: 0, callsFromReserved: 0, unitsReserved: 0, flushes: 0, rowsWritten: 0, refills: 0 };
  // Numbers reservations (and their ends) object-wide, so that an undo token names one reservation and
  // never a later one of a key whose entry was dropped and made again.
  #generations = 0;
  /** @type {SqlBlockList} */
  #blockList;
  // When the sweep alarm is due (ms), or null when none is scheduled.
  /** @type {number | null} */
  #alarmAtMs = null;

  /** @param {DurableObjectState} ctx @param {any} env */
  constructor(ctx, env) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    this.#persistent = /** @type {typeof SluiceDurableObject} */ (this.constructor).persistence !== false;
    this.#sql.exec(SCHEMA);
    this.#blockList = new SqlBlockList(this.#sql);
    ctx.blockConcurrencyWhile(async () => {
      this.#alarmAtMs = await ctx.storage.getAlarm();
    });
  }

  /** nowMs is the object's clock: every decision it makes is taken at this instant. */
  /** @returns {number} */
  nowMs() {
    return wallClockMs();
  }

  /** core is the object's SluiceCore (it changes when the rule table is rebuilt; see resident). */
  get core() {
    return this.#rules.core;
  }

  /**
   * decide checks every (rule, key, cost) of one request, all-or-nothing, and returns the Outcome
   * (without `store`, which the client adds). Options: `peek` charges nothing; `undoable` adds
   * `undo`, the tokens that let undo() take the charge back (for requests spread over shards).
   * Leases (leases.js): `lend` { wanted: units per check, leaseMs, aheadMs? } lends to the checks' keys when
   * the request is admitted (answer: `leases`); `giveBack` returns unused units first (`returned`).
   * An admitted request's answer waits for its charge to be stored (a promise); a denial or a peek does not.
   * @param {readonly StoreCheck[]} checks
   * @param {{ peek?: boolean, undoable?: boolean, lend?: { wanted: number[], leaseMs: number, aheadMs?: number }, giveBack?: GiveBack[] }} [options]
   * @returns {ObjectOutcome | Promise<ObjectOutcome>}
   */
  decide(checks, options = {}) {
    if (!Array.isArray(checks) || checks.length < 1 || checks.length > MAX_CHECKS_PER_CALL) {
      throw new RangeError(`checks must be an array of 1 to ${MAX_CHECKS_PER_CALL} checks`);
    }
    const nowMs = this.nowMs();
    const peek = options.peek === true;
    const undoable = options.undoable === true && !peek;
    // Plain calls (no peek, undo, lease) may spend and take reservations.
    const reserving = this.#persistent && !peek && options.lend === undefined && options.giveBack === undefined;
    this.#counters.calls++;
    if (reserving) {
      const spent = this.#spendReserved(checks, nowMs, undoable);
      if (spent !== null) {
        this.#counters.callsFromReserved++;
        return spent;
      }
    }
    // Units given back first, so that this very call may admit or lend them again.
    const returned = options.giveBack === undefined ? null : this.#takeBack(options.giveBack, nowMs);
    const indices = this.resident(checks);
    const core = this.#rules.core;
    this.#unreserve(checks, indices, nowMs);
    const before = undoable ? checks.map((c, i) => core.exportState(indices[i], c.key)) : null;
    const coreChecks = new Array(checks.length);
    for (let i = 0; i < checks.length; i++) coreChecks[i] = { rule: indices[i], key: checks[i].key, cost: checks[i].cost };
    /** @type {ObjectOutcome} */
    const outcome = core.checkAll(coreChecks, nowMs, { peek });
    if (returned !== null) outcome.returned = returned;
    // A blocking rule's denial blocked its key (cpp/include/sluice/block.hpp): stored before the answer,
    // so that the block outlives the object's memory as a charge does.
    const blocked = peek || outcome.allowed ? false : this.#persistBlocks(checks, indices, outcome, nowMs);
    if (blocked) return this.flushed().then(() => outcome);
    if (!outcome.allowed || peek) {
      // Units given back in this call are queued all the same: losing them to a crash only strands
      // them (the count errs high, never low), so nothing waits for them.
      if (this.#pending.size > 0) this.flushed().catch(() => {});
      return outcome;
    }
    if (options.lend !== undefined && !undoable) outcome.leases = this.#lend(checks, indices, options.lend, nowMs);
    /** @type {UndoToken[] | null} */
    const undo = undoable ? [] : null;
    for (let i = 0; i < checks.length; i++) {
      // Two checks on one rule and key are one charge; store it once.
      if (isRepeat(checks, i)) continue;
      const { rule, key } = checks[i];
      const reserved = reserving ? this.#reserve(checks[i], indices[i], nowMs) : 0;
      // A reservation may push the key's reset later (a sliding counter's): the row lives until then.
      const resetMs = reserved > 0 ? core.peek(indices[i], key, 1, nowMs).resetMs : outcome.checks[i].resetMs;
      const expiresAtMs = nowMs + resetMs;
      const after = this.persist(rule.id, key, indices[i], expiresAtMs);
      if (undo !== null && before !== null && after !== null) {
        /** @type {UndoToken} */
        const token = { rule: rule.id, key, before: before[i], after, afterExpiresAtMs: expiresAtMs };
        const entry = reserved > 0 ? this.#reserved.get(`${rule.id}\n${key}`) : undefined;
        if (entry !== undefined) token.reservation = { units: entry.units, generation: entry.generation };
        undo.push(token);
      }
    }
    if (undo !== null) outcome.undo = undo;
    // Nothing queued (an object without storage): nothing to wait for.
    if (this.#pending.size === 0) return outcome;
    const flushing = this.flushed();
    if (reserving) this.#awaitStored(checks, flushing);
    return flushing.then(() => outcome);
  }

  /**
   * refill lends units of the checks' keys without deciding a request: an isolate asks for its next
   * lease in the background while its current one still holds units (leases.js), so that a warm key
   * never waits on a round trip. `giveBack` is taken back first, then `lend` { wanted, leaseMs, aheadMs? } lends
   * as decide's would (lease.hpp sizes it). Answers { leases, returned, resetMs } once the lent units
   * are stored, so a restart still counts them.
   * @param {readonly StoreCheck[]} checks
   * @param {{ lend: { wanted: number[], leaseMs: number, aheadMs?: number }, giveBack?: GiveBack[] }} options
   * @returns {{ leases: (Lease | null)[], returned: number[] | null, resetMs: number[] } | Promise<{ leases: (Lease | null)[], returned: number[] | null, resetMs: number[] }>}
   */
  refill(checks, options) {
    if (!Array.isArray(checks) || checks.length < 1 || checks.length > MAX_CHECKS_PER_CALL) {
      throw new RangeError(`checks must be an array of 1 to ${MAX_CHECKS_PER_CALL} checks`);
    }
    if (options === null || typeof options !== "object" || options.lend === null || typeof options.lend !== "object") {
      throw new TypeError("refill needs options.lend { wanted, leaseMs }");
    }
    const nowMs = this.nowMs();
    this.#counters.refills++;
    const returned = options.giveBack === undefined ? null : this.#takeBack(options.giveBack, nowMs);
    const indices = this.resident(checks);
    const core = this.#rules.core;
    this.#unreserve(checks, indices, nowMs);
    const leases = this.#lend(checks, indices, options.lend, nowMs);
    const resetMs = new Array(checks.length).fill(0);
    for (let i = 0; i < checks.length; i++) {
      resetMs[i] = core.peek(indices[i], checks[i].key, 1, nowMs).resetMs;
      if (leases[i] !== null) this.persist(checks[i].rule.id, checks[i].key, indices[i], nowMs + resetMs[i]);
    }
    const answer = { leases, returned, resetMs };
    if (this.#pending.size === 0) return answer;
    return this.flushed().then(() => answer);
  }

  /**
   * decideInRegion makes this object a regional one (regional-lender.js; docs/leases.md, "A regional
   * tier"): it decides the request from the quota it borrowed of the keys' home object (`binding` in
   * env, `name`, `shards`: where the isolate's store keeps them), else at the home object, and lends
   * on to the caller (`lend`). `giveBack` returns units the caller did not use.
   * @param {readonly StoreCheck[]} checks
   * @param {{ binding: string, name: string, shards: number | "key", leaseMs: number, maxLeaseUnits: number, peek?: boolean, lend?: { wanted: number[] }, giveBack?: GiveBack[] }} options
   */
  decideInRegion(checks, options) {
    checkCallChecks(checks);
    return this.#lenderFor(options).decide(checks, options, () => this.nowMs());
  }

  /**
   * refillInRegion lends on to the caller without a request (its background refill), borrowing from
   * the home object first when this object holds nothing of a key. Options as decideInRegion's.
   * @param {readonly StoreCheck[]} checks
   * @param {{ binding: string, name: string, shards: number | "key", leaseMs: number, maxLeaseUnits: number, lend: { wanted: number[] }, giveBack?: GiveBack[] }} options
   */
  refillInRegion(checks, options) {
    checkCallChecks(checks);
    return this.#lenderFor(options).refill(checks, options, () => this.nowMs());
  }

  /** regionalCounters reports, per store this object lends on for, its leases' counters (roundTrips: calls to the home object). */
  regionalCounters() {
    return Object.fromEntries([...this.#lenders].map(([id, lender]) => [id, lender.counters]));
  }

  /**
   * homeNamespace is the namespace of the keys' home objects: env[binding]. (The tests' object puts
   * the home across a simulated planet here.)
   * @param {string} binding
   */
  homeNamespace(binding) {
    const namespace = /** @type {any} */ (this.env)?.[binding];
    if (namespace === null || typeof namespace !== "object" || typeof namespace.idFromName !== "function") {
      throw new TypeError(`the regional object has no Durable Object namespace bound as ${String(binding)}`);
    }
    return namespace;
  }

  /** @param {{ binding: string, name: string, shards: number | "key", leaseMs: number, maxLeaseUnits: number }} options @returns {RegionalLender} */
  #lenderFor(options) {
    if (options === null || typeof options !== "object") throw new TypeError("a regional call needs its options");
    const { binding, name, shards, leaseMs, maxLeaseUnits } = options;
    if (typeof binding !== "string" || typeof name !== "string") throw new TypeError("a regional call needs binding and name");
    const lease = checkLeaseOptions({ leaseMs, maxLeaseUnits });
    const id = JSON.stringify([binding, name, shards, leaseMs, maxLeaseUnits]);
    let lender = this.#lenders.get(id);
    if (lender === undefined) {
      if (this.#lenders.size >= MAX_REGIONAL_STORES) this.#lenders.delete(/** @type {string} */ (this.#lenders.keys().next().value));
      lender = new RegionalLender({
        namespace: this.homeNamespace(binding),
        settings: { name, shards, leaseMs: /** @type {any} */ (lease).leaseMs, maxLeaseUnits: /** @type {any} */ (lease).maxLeaseUnits },
        ctx: this.ctx,
      });
      this.#lenders.set(id, lender);
    }
    return lender;
  }

  // Stores the keys that this denied call blocked: each blocking rule's check whose own decision was a
  // denial with a finite wait. Returns whether it stored any.
  /** @param {readonly StoreCheck[]} checks @param {readonly number[]} indices @param {ObjectOutcome} outcome @param {number} nowMs @returns {boolean} */
  #persistBlocks(checks, indices, outcome, nowMs) {
    let any = false;
    for (let i = 0; i < checks.length; i++) {
      const own = outcome.checks[i];
      if (checks[i].rule.blockMs === undefined || own.allowed || own.retryAfterMs === Infinity || isRepeat(checks, i)) continue;
      this.persist(checks[i].rule.id, checks[i].key, indices[i], nowMs + own.resetMs);
      any = true;
    }
    return any && this.#pending.size > 0;
  }

  // Decides a plain call from reservations when every check's key holds enough reserved units
  // (already stored: nothing to write); else returns null. Counts the call in each key's demand.
  /** @param {readonly StoreCheck[]} checks @param {number} nowMs @param {boolean} undoable @returns {ObjectOutcome | Promise<ObjectOutcome> | null} */
  #spendReserved(checks, nowMs, undoable) {
    let covered = true;
    const entries = new Array(checks.length);
    for (let i = 0; i < checks.length; i++) {
      const { rule, key, cost = 1 } = checks[i];
      // A blocking rule's keys are decided by the core every time: a denial there blocks the key.
      if (!RESERVING_ALGORITHMS.includes(rule.algorithm) || rule.blockMs !== undefined) {
        covered = false;
        continue;
      }
      const entry = this.#reservationOf(rule.id, key, nowMs);
      noteRequest(entry, nowMs, RESERVE_PERIOD_MS);
      entries[i] = entry;
      if (entry.units < cost || nowMs >= entry.expiresAtMs || isRepeat(checks, i)) covered = false;
    }
    if (!covered) return null;
    const indices = this.resident(checks);
    const core = this.#rules.core;
    const coreChecks = new Array(checks.length);
    for (let i = 0; i < checks.length; i++) coreChecks[i] = { rule: indices[i], key: checks[i].key, cost: 1 };
    // The core's view without the reserved units: a peek of one unit, which reports what would be left
    // after it (so one more is left when it would admit). What is left is that plus what stays reserved.
    /** @type {ObjectOutcome} */
    const outcome = core.checkAll(coreChecks, nowMs, { peek: true });
    let deciding = 0;
    /** @type {Promise<void> | null} */
    let ready = null;
    for (let i = 0; i < checks.length; i++) {
      const entry = entries[i];
      entry.units -= checks[i].cost ?? 1;
      if (entry.ready !== null) ready = entry.ready;
      const decision = outcome.checks[i];
      const left = decision.allowed ? decision.remaining + 1 : decision.remaining;
      outcome.checks[i] = { ...decision, allowed: true, remaining: left + entry.units, retryAfterMs: 0 };
      if (outcome.checks[i].remaining < outcome.checks[deciding].remaining) deciding = i;
    }
    const { limit, remaining, resetMs } = outcome.checks[deciding];
    Object.assign(outcome, { allowed: true, limit, remaining, resetMs, retryAfterMs: 0, decidingCheck: deciding });
    // Units whose write is still on its way are not yet stored: answer once they are (that write is
    // the pending flush; waiting through flushed() counts this call in its batch).
    if (undoable) {
      outcome.undo = checks.map(({ rule, key, cost = 1 }, i) => ({ rule: rule.id, key, reserved: { units: cost, generation: entries[i].generation } }));
    }
    if (ready === null) return outcome;
    return (ready === this.#flush ? this.flushed() : ready).then(() => outcome);
  }

  // The key's entry in #reserved, made (and the oldest dropped) when missing.
  /** @param {string} ruleId @param {string} key @param {number} nowMs */
  #reservationOf(ruleId, key, nowMs) {
    const id = `${ruleId}\n${key}`;
    let entry = this.#reserved.get(id);
    if (entry === undefined) {
      // The oldest key's unspent units stay counted until its window ends: stranded, never lost.
      const oldest = this.#reserved.size >= MAX_RESERVED_KEYS ? this.#reserved.keys().next().value : undefined;
      if (oldest !== undefined) this.#reserved.delete(oldest);
      // generation changes whenever the reservation is made or given back: an undo of a charge spent
      // from it is only sound while the units it holds are still the ones charged to the core.
      entry = { ...freshDemand(nowMs), units: 0, expiresAtMs: 0, ready: null, generation: 0 };
      this.#reserved.set(id, entry);
    }
    return entry;
  }

  // Reserves units of an admitted check's warm key (charged now, in memory; stored by this call's
  // flush). Returns how many.
  /** @param {StoreCheck} check @param {number} index @param {number} nowMs @returns {number} */
  #reserve(check, index, nowMs) {
    if (!RESERVING_ALGORITHMS.includes(check.rule.algorithm) || check.rule.blockMs !== undefined) return 0;
    const entry = this.#reserved.get(`${check.rule.id}\n${check.key}`);
    if (entry === undefined) return 0;
    const wanted = unitsWanted(entry, nowMs, RESERVE_PERIOD_MS, MAX_RESERVE_UNITS);
    if (wanted === 0) return 0;
    const lease = this.#rules.core.lend(index, check.key, wanted, check.rule.windowMs, nowMs);
    entry.units = lease.units;
    entry.generation = ++this.#generations;
    entry.expiresAtMs = lease.expiresAtMs;
    this.#counters.unitsReserved += lease.units;
    return lease.units;
  }

  // Marks the reservations this call took as usable once `flushing` has stored them.
  /** @param {readonly StoreCheck[]} checks @param {Promise<void>} flushing */
  #awaitStored(checks, flushing) {
    for (const { rule, key } of checks) {
      const entry = this.#reserved.get(`${rule.id}\n${key}`);
      if (entry === undefined || entry.units === 0) continue;
      entry.ready = flushing;
      flushing.then(
        () => {
          if (entry.ready === flushing) entry.ready = null;
        },
        () => {},
      );
    }
  }

  // Gives the checks' reserved units back to the core, so that a call they do not cover sees the
  // keys' whole quota. The lower state is queued, not waited for: storage keeps counting the units
  // until it is written, which errs towards denying.
  /** @param {readonly StoreCheck[]} checks @param {readonly number[]} indices @param {number} nowMs */
  #unreserve(checks, indices, nowMs) {
    if (this.#reserved.size === 0) return;
    for (let i = 0; i < checks.length; i++) {
      const { rule, key } = checks[i];
      const entry = this.#reserved.get(`${rule.id}\n${key}`);
      if (entry === undefined || entry.units === 0) continue;
      const back = this.#rules.core.giveBack(indices[i], key, entry.units, entry.expiresAtMs);
      entry.units = 0;
      entry.generation = ++this.#generations;
      if (back > 0) this.persist(rule.id, key, indices[i], nowMs + this.#rules.core.peek(indices[i], key, 1, nowMs).resetMs);
    }
  }

  // Lends units of the checks' keys (leases.js asks; lease.hpp decides how many): per check, null or
  // { units, expiresAtMs, validForMs, startsAtMs, startsInMs, remaining }. validForMs lets the isolate
  // time the lease on its own clock, started before it sent the call, so that it ends no later than the
  // object's; startsInMs (a lease lent ahead: the key's window ends within aheadMs), timed from after
  // the answer came, so that it starts no earlier than the object's next window.
  /** @param {readonly StoreCheck[]} checks @param {readonly number[]} indices @param {{ wanted: number[], leaseMs: number, aheadMs?: number }} lend @param {number} nowMs @returns {(Lease | null)[]} */
  #lend(checks, indices, { wanted, leaseMs, aheadMs = 0 }, nowMs) {
    const core = this.#rules.core;
    const leases = new Array(checks.length).fill(null);
    for (let i = 0; i < checks.length; i++) {
      const units = wanted?.[i] ?? 0;
      // A blocking rule does not lend (the core refuses it): its requests all come here.
      if (!(units > 0) || isRepeat(checks, i) || !LENDING_ALGORITHMS.includes(checks[i].rule.algorithm) || checks[i].rule.blockMs !== undefined) continue;
      const ahead = Number.isFinite(aheadMs) && aheadMs > 0 ? Math.min(Math.floor(aheadMs), checks[i].rule.windowMs) : 0;
      const lease = core.lend(indices[i], checks[i].key, Math.min(units, MAX_LEASE_UNITS), leaseMs, nowMs, ahead);
      // endsWithWindow: cut short by the key's window, so a later lease in that window would end there
      // too (leases.js then renews it for its units, and near the window's end asks ahead).
      const endsWithWindow = WINDOW_LENDING_ALGORITHMS.includes(checks[i].rule.algorithm) && lease.expiresAtMs < lease.startsAtMs + leaseMs;
      if (lease.units > 0) leases[i] = { ...lease, validForMs: lease.expiresAtMs - nowMs, startsInMs: lease.startsAtMs - nowMs, endsWithWindow };
    }
    return leases;
  }

  // Takes back the unused units of leases ({ rule, key, units, expiresAtMs } each); returns how many
  // each key took (0 when its lease's window is over).
  /** @param {GiveBack[]} giveBack @param {number} nowMs @returns {number[]} */
  #takeBack(giveBack, nowMs) {
    if (!Array.isArray(giveBack)) throw new TypeError("giveBack must be an array");
    const returned = new Array(giveBack.length).fill(0);
    for (let i = 0; i < giveBack.length; i++) {
      const { rule, key, units, expiresAtMs } = giveBack[i];
      if (!LENDING_ALGORITHMS.includes(rule?.algorithm)) continue;
      const [index] = this.resident([{ rule, key }]);
      returned[i] = this.#rules.core.giveBack(index, key, units, expiresAtMs);
      if (returned[i] === 0) continue;
      // The row lives until the key is back to full quota, which a lease's end may come before.
      const resetMs = this.#rules.core.peek(index, key, 1, nowMs).resetMs;
      this.persist(rule.id, key, index, nowMs + resetMs);
    }
    return returned;
  }

  /**
   * undo takes back charges made by decide with `undoable`, each only if its key is still exactly as
   * that charge left it (otherwise someone was charged since, and the charge stays: the store then
   * errs towards denying, never admitting). Returns how many charges it took back.
   */
  /** @param {readonly UndoToken[]} tokens @returns {Promise<number>} */
  async undo(tokens) {
    let undone = 0;
    const core = this.#rules.core;
    for (const token of tokens) {
      if (token.reserved !== undefined) {
        // Spent from a reservation: the unit goes back to it while it is the same reservation (its
        // units are still charged to the core, and stored).
        const entry = this.#reserved.get(`${token.rule}\n${token.key}`);
        if (entry === undefined || entry.generation !== token.reserved.generation) continue;
        entry.units += token.reserved.units;
        undone++;
        continue;
      }
      const index = this.#indexOfId(token.rule);
      // A rule the core no longer holds was dropped with its keys: nothing of it is resident, so the
      // stored (or pending) row is the truth.
      const current = index === undefined ? this.#storedState(token.rule, token.key) : this.#residentState(index, token.rule, token.key);
      const after = token.after;
      if (current === null || after === undefined || !sameBytes(current, after)) continue;
      // A reservation this charge made must be untouched (nothing spent from it: spending leaves the
      // core's state as it was, so only the reservation shows it), and goes with it. Without one, any
      // reservation the key holds now was made after this charge, and changed the state: no match.
      const entry = this.#reserved.get(`${token.rule}\n${token.key}`);
      const made = token.reservation;
      if (made !== undefined) {
        if (entry === undefined || made.generation !== entry.generation || made.units !== entry.units) continue;
        entry.units = 0;
        entry.generation = ++this.#generations;
      } else if (entry !== undefined && entry.units > 0) {
        continue;
      }
      if (index !== undefined) {
        if (token.before === null || token.before === undefined) core.reset(index, token.key);
        else core.importState(index, token.key, new Uint8Array(token.before));
      }
      this.#queue(token.rule, token.key, token.before ?? null, /** @type {number} */ (token.afterExpiresAtMs));
      undone++;
    }
    await this.flushed();
    return undone;
  }

  /**
   * reset forgets the (rule, key) of each check: they are back to their full quota. Returns how many
   * stored keys it removed.
   * @param {readonly StoreCheck[]} checks
   * @returns {number}
   */
  reset(checks) {
    if (!Array.isArray(checks) || checks.length < 1 || checks.length > MAX_CHECKS_PER_CALL) {
      throw new RangeError(`checks must be an array of 1 to ${MAX_CHECKS_PER_CALL} checks`);
    }
    let removed = 0;
    for (const { rule, key } of checks) {
      const index = this.#indexOfId(rule.id);
      if (index !== undefined) this.#rules.core.reset(index, key);
      this.#pending.delete(`${rule.id}\n${key}`);
      this.#reserved.delete(`${rule.id}\n${key}`);
      removed += this.#persistent ? this.#sql.exec(FORGET, rule.id, key).rowsWritten : 0;
    }
    return removed;
  }

  /**
   * noteBlock, listBlocks and forgetBlock keep the deployment's list of auto-blocks (block-list-table.js),
   * in the one object the durable store names for it; times are the calling limiter's (nowMs).
   * @param {{ rule: string, key: string, untilMs: number }} entry @param {number} nowMs
   */
  noteBlock(entry, nowMs) {
    this.#blockList.note(entry, nowMs);
  }

  /** @param {number} nowMs */
  listBlocks(nowMs) {
    return this.#blockList.list(nowMs);
  }

  /** @param {string} rule @param {string} key */
  forgetBlock(rule, key) {
    this.#blockList.forget(rule, key);
  }

  /**
   * concurrency runs one operation of a concurrency rule ({ rule, key, holder, cost }): "acquire",
   * "release" or "renew", on the object's clock, and returns the core's decision. The key's holders
   * and leases are its state bytes in the same table as every other key: a row is written when the
   * operation changed it and removed when nobody holds anything; the sweep reclaims a row whose every
   * lease ran out (holders that vanished without releasing).
   * @param {string} op
   * @param {{ rule: NormalizedRule, key: string, holder: number, cost?: number }} check
   */
  concurrency(op, check) {
    if (op !== "acquire" && op !== "release" && op !== "renew") throw new RangeError(`op must be acquire, release or renew; got ${String(op)}`);
    const { rule, key, holder, cost = 1 } = check;
    const nowMs = this.nowMs();
    const [index] = this.#rules.indicesOf([{ rule }]);
    const core = this.#rules.core;
    try {
      const stored = this.#read(rule.id, key);
      if (op !== "acquire" && stored === null) return core.release(index, key, holder, nowMs); // nobody holds anything: a no-op
      if (stored !== null) importable(core, index, key, stored.state);
      const decision =
        op === "acquire" ? core.acquire(index, key, holder, cost, nowMs) : op === "release" ? core.release(index, key, holder, nowMs) : core.renew(index, key, holder, nowMs);
      if (op === "acquire" && !decision.allowed) return decision;
      if (decision.remaining === decision.limit) {
        this.#sql.exec(FORGET, rule.id, key);
      } else {
        // resetMs: until the newest lease runs out; then the row is dead weight for the sweep.
        const expiresAtMs = nowMs + decision.resetMs;
        const after = /** @type {Uint8Array} */ (core.exportState(index, key)); // someone holds units: there is state
        this.#sql.exec(WRITE, rule.id, key, after.buffer, expiresAtMs);
        if (this.#alarmAtMs === null) this.#scheduleSweep(expiresAtMs, nowMs);
      }
      return decision;
    } finally {
      core.reset(index, key);
    }
  }

  /**
   * storageStats reports, since the object started: decide calls, those answered from reserved units
   * (nothing written), units reserved, flushes (one transaction each), rows written and refills (leases
   * lent in the background, without a request: refill); and now: the
   * keys holding reserved units and the units unspent (what a restart would strand).
   */
  storageStats() {
    let reservedKeys = 0;
    let unitsUnspent = 0;
    const nowMs = this.nowMs();
    for (const entry of this.#reserved.values()) {
      if (entry.units === 0 || nowMs >= entry.expiresAtMs) continue;
      reservedKeys++;
      unitsUnspent += entry.units;
    }
    return { ...this.#counters, reservedKeys, unitsUnspent };
  }

  /** alarm sweeps the keys that are back to their full quota, then schedules the next sweep. */
  async alarm() {
    this.#alarmAtMs = null;
    const nowMs = this.nowMs();
    // Rows not yet written are newer than what the sweep reads: write them first.
    this.#writePending();
    this.#sql.exec(SWEEP, nowMs);
    const next = /** @type {number | null} */ (this.#sql.exec(NEXT_EXPIRY).one().next);
    if (next !== null) await this.#scheduleSweep(next, nowMs);
    else await this.ctx.storage.deleteAlarm(); // a no-op when the runtime fired this alarm; not when called directly
  }

  /**
   * resident registers the checks' rules and makes sure the core holds every check's key as storage
   * has it; returns the rule indices, in order. A key is read from storage at most once per start of
   * the object (or after its rule's table evicted a key, since the table does not say which).
   * @param {ReadonlyArray<Pick<StoreCheck, "rule" | "key">>} checks
   * @returns {number[]}
   */
  resident(checks) {
    const indices = this.#rules.indicesOf(checks);
    const core = this.#rules.core;
    if (this.#rules.generation !== this.#loadedGeneration) {
      this.#loaded.clear();
      this.#evictions.clear();
      this.#loadedGeneration = this.#rules.generation;
    }
    for (let i = 0; i < checks.length; i++) {
      const { rule, key } = checks[i];
      let keys = this.#loaded.get(rule.id);
      if (keys === undefined || this.#evictedSince(rule.id, indices[i])) {
        keys = new Set();
        this.#loaded.set(rule.id, keys);
      }
      if (keys.has(key)) continue;
      this.#load(core, indices[i], rule.id, key);
      // Loading may itself evict a key of this call: loading the call's keys again finds that out.
      if (this.#evictedSince(rule.id, indices[i])) return this.#reloadAll(checks, indices);
      keys.add(key);
    }
    return indices;
  }

  /**
   * persist queues the state the core now holds for (rule id, key) for the next flush, and returns
   * those bytes. `expiresAtMs` is when the key is back to its full quota (the sweep's cue).
   * @param {string} ruleId @param {string} key @param {number} index @param {number} expiresAtMs
   * @returns {Uint8Array | null}
   */
  persist(ruleId, key, index, expiresAtMs) {
    const state = this.#rules.core.exportState(index, key);
    this.#queue(ruleId, key, state, expiresAtMs);
    return state;
  }

  /**
   * flushed resolves once every queued state is written, in one transaction for all the calls that
   * queued before it ran. The write happens in a later task than the call that queued it, so calls
   * arriving meanwhile join it; the output gate holds every answer until the transaction is durable.
   * @returns {Promise<void>}
   */
  flushed() {
    if (this.#flush === null) {
      /** @type {() => void} */
      let run = () => {};
      this.#flush = new Promise((resolve, reject) => {
        run = () => {
          if (this.#runFlush !== run) return; // already run (the timer and the batch both fire it)
          this.#runFlush = null;
          this.#flush = null;
          this.#waiting = 0;
          try {
            this.#writePending();
            resolve();
          } catch (error) {
            reject(error);
          }
        };
      });
      this.#runFlush = run;
      setTimeout(run, 0);
    }
    // A timer fires only once the object has no event ready, which under a steady stream of calls can
    // be tens of milliseconds away: a full batch goes at once.
    if (++this.#waiting >= FLUSH_BATCH_CALLS && this.#runFlush !== null) queueMicrotask(this.#runFlush);
    return this.#flush;
  }

  /** @param {string} ruleId @param {string} key @param {Uint8Array | ArrayBuffer | null} state @param {number} expiresAtMs */
  #queue(ruleId, key, state, expiresAtMs) {
    if (!this.#persistent) return;
    this.#pending.set(`${ruleId}\n${key}`, { rule: ruleId, key, state, expiresAtMs });
  }

  #writePending() {
    if (this.#pending.size === 0) return;
    const rows = [...this.#pending.values()];
    this.#pending.clear();
    this.#counters.flushes++;
    this.#counters.rowsWritten += rows.length;
    let earliestExpiryMs = Infinity;
    try {
      this.ctx.storage.transactionSync(() => {
        for (const row of rows) {
          if (row.state === null) this.#sql.exec(FORGET, row.rule, row.key);
          else this.#sql.exec(WRITE, row.rule, row.key, row.state, row.expiresAtMs);
          if (row.expiresAtMs < earliestExpiryMs) earliestExpiryMs = row.expiresAtMs;
        }
      });
    } catch (error) {
      // What the core holds was never stored: forget it all, so every key is read again from storage,
      // and the reservations, which storage may not count.
      this.#rules.discard();
      this.#reserved.clear();
      throw error;
    }
    if (this.#alarmAtMs === null && earliestExpiryMs !== Infinity) this.#scheduleSweep(earliestExpiryMs, this.nowMs());
  }

  // Loads one key into the core: its pending state, else its stored row, else a fresh key.
  /** @param {SluiceCore} core @param {number} index @param {string} ruleId @param {string} key */
  #load(core, index, ruleId, key) {
    const state = this.#storedState(ruleId, key);
    if (state === null || !importable(core, index, key, state)) core.reset(index, key);
  }

  // A key's stored row as { state }, or null (the concurrency operations read and write their keys'
  // rows directly, the core serving as scratch space for one operation).
  /** @param {string} ruleId @param {string} key @returns {{ state: Uint8Array | ArrayBuffer } | null} */
  #read(ruleId, key) {
    const state = this.#storedState(ruleId, key);
    return state === null ? null : { state };
  }

  /** @param {string} ruleId @param {string} key @returns {Uint8Array | ArrayBuffer | null} */
  #storedState(ruleId, key) {
    const pending = this.#pending.get(`${ruleId}\n${key}`);
    if (pending !== undefined) return pending.state;
    if (!this.#persistent) return null;
    const { value } = this.#sql.exec(READ, ruleId, key).next();
    return value === undefined ? null : /** @type {ArrayBuffer} */ (value.state);
  }

  /** @param {number} index @param {string} ruleId @param {string} key */
  #residentState(index, ruleId, key) {
    // Its rule is registered already: its id is all resident reads of it.
    this.resident(/** @type {Array<Pick<StoreCheck, "rule" | "key">>} */ ([{ rule: { id: ruleId }, key }]));
    return this.#rules.core.exportState(index, key);
  }

  /** @param {string} ruleId @returns {number | undefined} */
  #indexOfId(ruleId) {
    for (const [id, index] of this.#rules.registered()) if (id === ruleId) return index;
    return undefined;
  }

  // Whether rule `index`'s table evicted a key since its loaded set was last known good; notes the
  // count either way.
  /** @param {string} ruleId @param {number} index @returns {boolean} */
  #evictedSince(ruleId, index) {
    const now = this.#rules.core.stats(index).evictions;
    const known = this.#evictions.get(ruleId);
    this.#evictions.set(ruleId, now);
    return known !== undefined && known !== now;
  }

  // A call's own keys fought over one bucket while loading: with so few keys per call and tables of
  // thousands, this needs an unlucky bucket. Load them all once more; if the table still cannot hold
  // them together, refuse the call (the client falls back) rather than decide on a forgotten state.
  /** @param {ReadonlyArray<Pick<StoreCheck, "rule" | "key">>} checks @param {number[]} indices */
  #reloadAll(checks, indices) {
    const core = this.#rules.core;
    for (const { rule } of checks) this.#loaded.set(rule.id, new Set());
    for (let i = 0; i < checks.length; i++) this.#load(core, indices[i], checks[i].rule.id, checks[i].key);
    let evicted = false;
    for (let i = 0; i < checks.length; i++) evicted = this.#evictedSince(checks[i].rule.id, indices[i]) || evicted;
    if (evicted) throw new Error("sluice: a call's keys overflowed the Durable Object's key table");
    for (const { rule, key } of checks) this.#loaded.get(rule.id)?.add(key);
    return indices;
  }

  /** @param {number} expiryMs @param {number} nowMs @returns {Promise<void>} */
  #scheduleSweep(expiryMs, nowMs) {
    const atMs = Math.max(expiryMs, nowMs + SWEEP_INTERVAL_MS);
    this.#alarmAtMs = atMs;
    return this.ctx.storage.setAlarm(atMs).catch(() => {
      this.#alarmAtMs = null; // try again on the next write
    });
  }
}

// Imports stored bytes; false when the core refuses them (written by a core with another state
// format): the key then starts over rather than failing every request until its row expires.
/** @param {SluiceCore} core @param {number} index @param {string} key @param {Uint8Array | ArrayBuffer} state @returns {boolean} */
function importable(core, index, key, state) {
  try {
    core.importState(index, key, new Uint8Array(state));
    return true;
  } catch (error) {
    if (error instanceof SluiceError && error.status === Status.INVALID_STATE) return false;
    throw error;
  }
}

// A call's checks: 1 to MAX_CHECKS_PER_CALL of them.
/** @param {unknown} checks */
function checkCallChecks(checks) {
  if (!Array.isArray(checks) || checks.length < 1 || checks.length > MAX_CHECKS_PER_CALL) {
    throw new RangeError(`checks must be an array of 1 to ${MAX_CHECKS_PER_CALL} checks`);
  }
}

/** @param {readonly StoreCheck[]} checks @param {number} i @returns {boolean} */
function isRepeat(checks, i) {
  for (let j = 0; j < i; j++) {
    if (checks[j].rule.id === checks[i].rule.id && checks[j].key === checks[i].key) return true;
  }
  return false;
}
