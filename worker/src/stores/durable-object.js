// The Durable Object store: exact counting across every isolate and location.
//
// SluiceDurableObject runs the same wasm core as the isolates. Its SQLite storage is the single
// source of truth: each RPC imports the state bytes of the keys it checks into the core, decides all
// checks at once (all-or-nothing, on the object's clock), writes the charged keys' new bytes back, and
// leaves the core empty again. Nothing lives only in memory, so an evicted or restarted object loses
// no count, and the core never evicts a key that storage still counts.
//
// The Worker side, createDurableStore, is in durable.js.
import { DurableObject } from "cloudflare:workers";
import { MAX_CHECKS_PER_CALL, SluiceError, Status } from "../../../wasm-bindings/sluice.js";
import { nowMs as wallClockMs } from "../clock.js";
import { sameBytes } from "./bytes.js";
import { RuleCore } from "./rule-core.js";

/** @import { Outcome } from "../../../wasm-bindings/sluice.js" */
/** @import { StoreCheck } from "./store.js" */

/**
 * Takes back one charge of an undoable decide (a request spread over several objects).
 * @typedef {object} UndoToken
 * @property {string} rule
 * @property {string} key
 * @property {ArrayBuffer | null} before
 * @property {number | null} beforeExpiresAtMs
 * @property {ArrayBuffer} after
 */
/**
 * The object's answer: the core's Outcome, with `undo` when decide was called with `undoable` and charged.
 * @typedef {Outcome & { undo?: UndoToken[] }} ObjectOutcome
 */

// The core's key table is scratch space for one call's keys (at most 16): it starts and ends every
// call empty, so 32 keys per rule is room enough that loading a call's keys never evicts one of them.
const SCRATCH_KEYS_PER_RULE = 32;

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
const READ = "SELECT state, expires_at FROM sluice_keys WHERE rule = ? AND key = ?";
const WRITE = `INSERT INTO sluice_keys (rule, key, state, expires_at) VALUES (?, ?, ?, ?)
  ON CONFLICT (rule, key) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at`;
const FORGET = "DELETE FROM sluice_keys WHERE rule = ? AND key = ?";
const SWEEP = "DELETE FROM sluice_keys WHERE expires_at <= ?";
const NEXT_EXPIRY = "SELECT MIN(expires_at) AS next FROM sluice_keys";

/**
 * SluiceDurableObject counts keys exactly. Export it from the Worker's main module and bind it with a
 * `new_sqlite_classes` migration (see README.md, "Stores").
 */
export class SluiceDurableObject extends DurableObject {
  #rules = new RuleCore((rule) => ({
    algorithm: rule.algorithm,
    limit: rule.limit,
    windowMs: rule.windowMs,
    burst: rule.burst,
    countDenied: rule.countDenied ?? false,
    keyCapacity: SCRATCH_KEYS_PER_RULE,
  }));
  /** @type {SqlStorage} */
  #sql;
  // When the sweep alarm is due (ms), or null when none is scheduled.
  /** @type {number | null} */
  #alarmAtMs = null;

  /** @param {DurableObjectState} ctx @param {any} env */
  constructor(ctx, env) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    this.#sql.exec(SCHEMA);
    ctx.blockConcurrencyWhile(async () => {
      this.#alarmAtMs = await ctx.storage.getAlarm();
    });
  }

  /** nowMs is the object's clock: every decision it makes is taken at this instant. */
  /** @returns {number} */
  nowMs() {
    return wallClockMs();
  }

  /**
   * decide checks every (rule, key, cost) of one request, all-or-nothing, and returns the Outcome
   * (without `store`, which the client adds). Options: `peek` charges nothing; `undoable` adds
   * `undo`, the tokens that let undo() take the charge back (for requests spread over shards).
   */
  /**
   * @param {readonly StoreCheck[]} checks
   * @param {{ peek?: boolean; undoable?: boolean }} [options]
   * @returns {ObjectOutcome}
   */
  decide(checks, options = {}) {
    if (!Array.isArray(checks) || checks.length < 1 || checks.length > MAX_CHECKS_PER_CALL) {
      throw new RangeError(`checks must be an array of 1 to ${MAX_CHECKS_PER_CALL} checks`);
    }
    const nowMs = this.nowMs();
    const peek = options.peek === true;
    const indices = this.#rules.indicesOf(checks);
    const core = this.#rules.core;
    const count = checks.length;
    const stored = new Array(count);
    const coreChecks = new Array(count);
    const evictionsBefore = this.#evictions(indices);
    try {
      for (let i = 0; i < count; i++) {
        const { rule, key, cost } = checks[i];
        stored[i] = this.#read(rule.id, key);
        if (stored[i] !== null && !importable(core, indices[i], key, stored[i].state)) stored[i] = null;
        // No row: the key is fresh. Said explicitly, since the scratch table's eviction summary would
        // otherwise start it from what keys evicted in an overflow owed (the rows are the truth here).
        if (stored[i] === null) core.reset(indices[i], key);
        coreChecks[i] = { rule: indices[i], key, cost };
      }
      /** @type {ObjectOutcome} */
      const outcome = core.checkAll(coreChecks, nowMs, { peek });
      if (this.#evictions(indices) !== evictionsBefore) {
        // Two of this call's keys fought over one bucket of the scratch table: the decision may have
        // been taken on a forgotten state. Write nothing and let the client fall back.
        throw new Error("sluice: a call's keys overflowed the Durable Object's scratch key table");
      }
      if (outcome.allowed && !peek) {
        const undo = this.#writeCharged(checks, indices, stored, outcome, nowMs, options.undoable === true);
        if (undo !== null) outcome.undo = undo;
      }
      return outcome;
    } finally {
      for (let i = 0; i < count; i++) core.reset(indices[i], checks[i].key);
    }
  }

  /**
   * undo takes back charges made by decide with `undoable`, each only if its key is still exactly as
   * that charge left it (otherwise someone was charged since, and the charge stays: the store then
   * errs towards denying, never admitting). Returns how many charges it took back.
   */
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
    for (const { rule, key } of checks) removed += this.#sql.exec(FORGET, rule.id, key).rowsWritten;
    return removed;
  }

  /** @param {readonly UndoToken[]} tokens @returns {number} */
  undo(tokens) {
    let undone = 0;
    for (const token of tokens) {
      const current = this.#read(token.rule, token.key);
      if (current === null || !sameBytes(current.state, token.after)) continue;
      if (token.before === null) {
        this.#sql.exec(FORGET, token.rule, token.key);
      } else {
        this.#sql.exec(WRITE, token.rule, token.key, token.before, token.beforeExpiresAtMs);
      }
      undone++;
    }
    return undone;
  }

  /** alarm sweeps the keys that are back to their full quota, then schedules the next sweep. */
  async alarm() {
    this.#alarmAtMs = null;
    const nowMs = this.nowMs();
    this.#sql.exec(SWEEP, nowMs);
    const next = this.#sql.exec(NEXT_EXPIRY).one().next;
    if (next !== null) await this.#scheduleSweep(next, nowMs);
    else await this.ctx.storage.deleteAlarm(); // a no-op when the runtime fired this alarm; not when called directly
  }

  #read(ruleId, key) {
    const { value } = this.#sql.exec(READ, ruleId, key).next();
    return value === undefined ? null : value;
  }

  // Writes the new state of every charged key; returns undo tokens when asked for, else null.
  #writeCharged(checks, indices, stored, outcome, nowMs, undoable) {
    const core = this.#rules.core;
    /** @type {UndoToken[] | null} */
    const undo = undoable ? [] : null;
    let earliestExpiryMs = Infinity;
    for (let i = 0; i < checks.length; i++) {
      const { rule, key } = checks[i];
      // Two checks on one rule and key are one charge; write it once.
      if (isRepeat(checks, i)) continue;
      const after = /** @type {ArrayBuffer} */ (/** @type {Uint8Array} */ (core.exportState(indices[i], key)).buffer);
      // The core says how long until the key is back to full quota; after that its row is dead weight.
      const expiresAtMs = nowMs + outcome.checks[i].resetMs;
      this.#sql.exec(WRITE, rule.id, key, after, expiresAtMs);
      if (expiresAtMs < earliestExpiryMs) earliestExpiryMs = expiresAtMs;
      if (undo !== null) {
        const before = stored[i];
        undo.push({
          rule: rule.id,
          key,
          before: before === null ? null : before.state,
          beforeExpiresAtMs: before === null ? null : before.expires_at,
          after,
        });
      }
    }
    if (this.#alarmAtMs === null) this.#scheduleSweep(earliestExpiryMs, nowMs);
    return undo;
  }

  #scheduleSweep(expiryMs, nowMs) {
    const atMs = Math.max(expiryMs, nowMs + SWEEP_INTERVAL_MS);
    this.#alarmAtMs = atMs;
    return this.ctx.storage.setAlarm(atMs).catch(() => {
      this.#alarmAtMs = null; // try again on the next write
    });
  }

  // The sum of the evictions of still-restricting keys from the call's rules' tables. Evicting a key
  // whose state was already back to a fresh one's (a slot reset left) loses nothing.
  #evictions(indices) {
    let total = 0;
    for (let i = 0; i < indices.length; i++) {
      if (indices.indexOf(indices[i]) === i) total += this.#rules.core.stats(indices[i]).evictionsRestricting;
    }
    return total;
  }
}

// Imports stored bytes; false when the core refuses them (written by a core with another state
// format): the key then starts over rather than failing every request until its row expires.
function importable(core, index, key, state) {
  try {
    core.importState(index, key, new Uint8Array(state));
    return true;
  } catch (error) {
    if (error instanceof SluiceError && error.status === Status.INVALID_STATE) return false;
    throw error;
  }
}

function isRepeat(checks, i) {
  for (let j = 0; j < i; j++) {
    if (checks[j].rule.id === checks[i].rule.id && checks[j].key === checks[i].key) return true;
  }
  return false;
}
