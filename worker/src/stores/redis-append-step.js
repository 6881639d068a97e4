// The Redis store's append step (redis-append-script.js): a batch on one key this isolate saw
// contended goes in the key's log, in one round trip whatever the other isolates do, and is decided
// on the state and log entries the script answers with, at the entry's time (Redis's TIME). The call
// also folds the log this isolate replayed last time back into the key's state.
import { DeadlineError } from "./deadline.js";
import { contextOf, releaseAll } from "./redis-batches.js";
import { entryRequestOf } from "./redis-decide.js";
import { entryOf, parseEntry, splitView, tagOfEntry, viewOf } from "./redis-values.js";

/** @import { Outcome } from "./store.js" */
/** @import { RedisStoreParts } from "./redis.js" */
/** @import { RedisLink } from "./redis-connection.js" */
/** @typedef {import("./redis-batches.js").BatchUnderWay<import("./redis-decide.js").Waiting>} Batch */

/**
 * appendOnce sends the batch's requests to its key's log and answers them. Resolves false when
 * another isolate held the key (nothing appended, after a wait: try again), true once every request
 * is answered (or failed, for a call given up on).
 * @param {RedisStoreParts} parts
 * @param {RedisLink} link
 * @param {Batch} under its keys hold one key
 * @param {string} view the key's view as this isolate last saw it
 * @returns {Promise<boolean>}
 */
export async function appendOnce(parts, link, under, view) {
  const { connection, counters } = parts;
  const { entry, liveMs } = entryFor(parts, link, under);
  const fold = foldOf(parts, link, under, view);
  const args = [entry, link.caller, fold.value, fold.count, fold.next, liveMs, fold.expiresAtMs, fold.lastTag];
  /** @type {unknown} */
  let reply;
  try {
    reply = await connection.send(link, "append", parts.names.scriptKeysOf(under.keys), args, contextOf(under));
  } catch (error) {
    if (!(error instanceof DeadlineError) || !(/** @type {any} */ (error).late instanceof Promise)) throw error;
    answerGivenUp(parts, under, /** @type {DeadlineError & { late: Promise<unknown> }} */ (error));
    return true;
  }
  const appended = parseAppendReply(reply);
  if (appended === null) {
    counters.held++;
    await connection.waitForHolder(/** @type {any} */ (reply)[2]);
    return false;
  }
  answerAppended(parts, under, appended, entry);
  return true;
}

/**
 * entryFor is the batch as a log entry (with a tag of its own), and how long the key's state and log
 * must live past its append.
 * @param {RedisStoreParts} parts
 * @param {RedisLink} link
 * @param {Batch} under
 * @returns {{ entry: string, liveMs: number }}
 */
export function entryFor(parts, link, under) {
  return { entry: entryOf(parts.tags.tagged("", link.caller).slice(1), under.batch.map(entryRequestOf)), liveMs: liveMsOf(parts, under) };
}

/**
 * answerAppended answers a batch whose entry was appended (by the append, or by a compare-and-set that
 * could not set): each request decided on the answered state and log, at the entry's time.
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 * @param {{ nowMs: number, value: string, log: string[] }} appended
 * @param {string} entry
 */
export function answerAppended(parts, under, appended, entry) {
  const { counters } = parts;
  const results = decideAppended(parts, under, appended);
  parts.cache.remember(under.keys[0], viewOf(appended.value, [...appended.log, `${appended.nowMs}|${entry}`]));
  counters.batches++;
  counters.appends++;
  releaseAll(under);
  under.batch.forEach((request, r) => {
    const result = results[r];
    if (result instanceof Error) return request.reject(result);
    counters.decisions++;
    request.resolve(/** @type {Outcome} */ ({ ...result, store: "redis" }));
  });
}

/**
 * The batch's decisions: the answered state and log replayed, then the batch, at the entry's time.
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 * @param {{ nowMs: number, value: string, log: string[] }} appended
 */
function decideAppended(parts, under, { nowMs, value, log }) {
  const marginMs = Math.ceil(parts.connection.typicalRoundTripMs());
  return parts.decider.decide(under.batch, under.keys, [viewOf(value, log)], nowMs, marginMs).results;
}

/**
 * The fold this call carries: the log of the view this isolate last saw, replayed on its state, as a
 * new tagged state (set only if the key still holds that state, and its log the last entry replayed
 * where this isolate saw it). None for a view without a log, or one older than a window (its key
 * may have expired and started again since; the last entry's tag guards that too).
 * @param {RedisStoreParts} parts
 * @param {RedisLink} link
 * @param {Batch} under
 * @param {string} view
 * @returns {{ value: string, count: number, next: string, expiresAtMs: number, lastTag: string }}
 */
function foldOf(parts, link, under, view) {
  const none = { value: "", count: 0, next: "", expiresAtMs: 0, lastTag: "" };
  const { value, log } = splitView(view);
  if (log.length === 0) return none;
  const { connection } = parts;
  const atMs = Math.round(connection.localTime() + (connection.offsetMs ?? 0));
  const first = under.batch[0];
  if (parseEntry(log[log.length - 1]).atMs < atMs - first.checks[0].rule.windowMs) return none;
  const decided = parts.decider.decide([], under.keys, [view], atMs, 0, first);
  const lastTag = tagOfEntry(log[log.length - 1]);
  return { value, count: log.length, next: parts.tags.tagged(decided.next[0], link.caller), expiresAtMs: decided.expiresAtMs[0], lastTag };
}

/**
 * How long the key's state and log must live past this append: the longest the batch's effect can
 * last (two windows, or the time a full bucket takes to refill if longer, a block, a lease), plus the
 * clock tolerance. Folds and compare-and-sets then set the exact expiry the core says.
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 * @returns {number}
 */
function liveMsOf(parts, under) {
  const { rule } = under.batch[0].checks[0];
  const refillMs = rule.burst > rule.limit ? (rule.windowMs * rule.burst) / rule.limit : rule.windowMs;
  const leaseMs = Math.max(0, ...under.batch.map((request) => request.lend?.leaseMs ?? 0));
  return Math.ceil(2 * refillMs + (rule.blockMs ?? 0) + leaseMs + parts.config.clockToleranceMs);
}

/**
 * The call was given up on: its requests fail with DeadlineErrors whose late decisions come from its
 * late answer (replayed as any answer is). A late charge in a log cannot be taken back (takeBack counts
 * it in undoMissed): entries after it were decided on it.
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 * @param {DeadlineError & { late: Promise<unknown> }} error
 */
function answerGivenUp(parts, under, error) {
  const { counters } = parts;
  releaseAll(under);
  const results = error.late.then((reply) => {
    counters.lateAnswered++;
    const appended = parseAppendReply(reply);
    if (appended === null) return null; // held: nothing appended, nothing charged
    counters.lateApplied++;
    return decideAppended(parts, under, appended);
  });
  results.catch(() => {});
  contextOf(under)?.waitUntil(results.catch(() => {}));
  under.batch.forEach((request, r) => {
    const late = results.then((all) => lateAppendedOutcome(parts, all, r));
    late.catch(() => {});
    request.reject(Object.assign(new DeadlineError("redis", error.timeoutMs), { late }));
  });
}

/**
 * lateAppendedOutcome is request `r`'s late decision from a given-up call's appended entry (its
 * charge cannot be taken back: takeBack counts it as missed).
 * @param {RedisStoreParts} parts
 * @param {Array<Outcome | Error> | null} results null: nothing was appended
 * @param {number} r
 * @returns {Outcome}
 */
export function lateAppendedOutcome(parts, results, r) {
  const result = results?.[r];
  if (results === null || result === undefined) throw new Error("redis: the call given up on appended nothing");
  if (result instanceof Error) throw result;
  const outcome = /** @type {Outcome} */ ({ ...result, store: "redis" });
  parts.givenUp.appended(outcome);
  return outcome;
}

/**
 * decideLate decides a given-up batch from its late entry's reply (null: nothing appended).
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 * @param {unknown} reply
 * @returns {Array<Outcome | Error> | null}
 */
export function decideLate(parts, under, reply) {
  const appended = parseAppendReply(reply);
  return appended === null ? null : decideAppended(parts, under, appended);
}

/**
 * parseAppendReply reads the append branch's reply ({1, now, state, log}, or a compare-and-set's that
 * appended, {2, ...}): null when another caller held the key.
 * @param {unknown} reply
 * @returns {{ nowMs: number, value: string, log: string[] } | null}
 */
export function parseAppendReply(reply) {
  const valid = Array.isArray(reply) && Number.isFinite(Number(reply[1]));
  if (valid && reply[0] === 0 && Number(reply[2]) >= 0) return null;
  if (!valid || (reply[0] !== 1 && reply[0] !== 2) || typeof reply[2] !== "string" || !Array.isArray(reply[3])) {
    throw new Error("redis store: the append script's reply is malformed");
  }
  return { nowMs: Number(reply[1]), value: reply[2], log: reply[3].map(String) };
}

