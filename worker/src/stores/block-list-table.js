// The deployment's list of auto-blocks, as a store keeps it (features/auto-block/): which (rule, key)
// pairs are blocked until when. The blocks themselves are the strikes rules' state in the core; a
// store cannot be asked which of its keys are blocked, so the isolate that starts or meets a block
// notes it here, and any isolate lists them. Bounded: past MAX_LISTED_BLOCKS entries, the ones ending
// first are dropped (their blocks go on; a lift still reaches them by their key).

/** How many blocks a store's list keeps. */
export const MAX_LISTED_BLOCKS = 10_000;
/** Keys longer than this many characters are not noted (the noting isolate's own list still holds them). */
export const MAX_LISTED_KEY_CHARS = 1024;

/**
 * A store's list of blocks: the Durable Object and Redis stores have one (the memory store's blocks are
 * the isolate's own list). Times are on the clock of the limiter that noted or lists them (ms).
 * @typedef {object} BlockListStore
 * @property {(entry: { rule: string, key: string, untilMs: number }, options: { nowMs: number, env?: unknown }) => Promise<void>} note
 *   Notes a block (a later end replaces an earlier one, never the reverse).
 * @property {(options: { nowMs: number, env?: unknown }) => Promise<Array<{ rule: string, key: string, untilMs: number }>>} list
 *   The blocks that have not ended at nowMs, ending soonest first.
 * @property {(rule: string, key: string, options: { env?: unknown }) => Promise<void>} forget Takes a block off the list (a lift).
 */

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS sluice_blocks (
    rule TEXT NOT NULL,        -- the auto-blocking rule's name
    key TEXT NOT NULL,         -- the key as the rule's key function gave it
    until_ms INTEGER NOT NULL, -- when the block ends (ms since the epoch, the noting limiter's clock)
    PRIMARY KEY (rule, key)
  );
  CREATE INDEX IF NOT EXISTS sluice_blocks_by_end ON sluice_blocks (until_ms);
`;
const NOTE = `INSERT INTO sluice_blocks (rule, key, until_ms) VALUES (?, ?, ?)
  ON CONFLICT (rule, key) DO UPDATE SET until_ms = MAX(until_ms, excluded.until_ms)`;
const ENDED = "DELETE FROM sluice_blocks WHERE until_ms <= ?";
const OVERFLOW = `DELETE FROM sluice_blocks WHERE rowid IN
  (SELECT rowid FROM sluice_blocks ORDER BY until_ms LIMIT MAX(0, (SELECT COUNT(*) FROM sluice_blocks) - ?))`;
const LIST = "SELECT rule, key, until_ms FROM sluice_blocks WHERE until_ms > ? ORDER BY until_ms LIMIT ?";
const FORGET = "DELETE FROM sluice_blocks WHERE rule = ? AND key = ?";

/**
 * The list of blocks in a Durable Object's SQLite storage (SluiceDurableObject's noteBlock, listBlocks
 * and forgetBlock). Created on first use, so objects that never hear of a block have no such table.
 */
export class SqlBlockList {
  #sql;
  #ready = false;

  /** @param {SqlStorage} sql */
  constructor(sql) {
    this.#sql = sql;
  }

  #table() {
    if (!this.#ready) this.#sql.exec(SCHEMA);
    this.#ready = true;
    return this.#sql;
  }

  /** @param {{ rule: string, key: string, untilMs: number }} entry @param {number} nowMs */
  note({ rule, key, untilMs }, nowMs) {
    checkEntry(rule, key, untilMs);
    const sql = this.#table();
    sql.exec(ENDED, nowMs);
    sql.exec(NOTE, rule, key, untilMs);
    sql.exec(OVERFLOW, MAX_LISTED_BLOCKS);
  }

  /** @param {number} nowMs @returns {Array<{ rule: string, key: string, untilMs: number }>} */
  list(nowMs) {
    if (!Number.isFinite(nowMs)) throw new RangeError("nowMs must be a number of ms");
    return this.#table()
      .exec(LIST, nowMs, MAX_LISTED_BLOCKS)
      .toArray()
      .map((row) => ({ rule: String(row.rule), key: String(row.key), untilMs: Number(row.until_ms) }));
  }

  /** @param {string} rule @param {string} key */
  forget(rule, key) {
    checkEntry(rule, key, 0);
    this.#table().exec(FORGET, rule, key);
  }
}

/** @param {unknown} rule @param {unknown} key @param {unknown} untilMs */
function checkEntry(rule, key, untilMs) {
  if (typeof rule !== "string" || rule === "" || rule.length > 256) throw new RangeError("rule must be a rule's name");
  if (typeof key !== "string" || key.length > MAX_LISTED_KEY_CHARS) throw new RangeError(`key must be a string of at most ${MAX_LISTED_KEY_CHARS} characters`);
  if (!Number.isSafeInteger(untilMs)) throw new RangeError("untilMs must be a whole number of ms");
}
