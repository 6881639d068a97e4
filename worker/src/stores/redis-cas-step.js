// The Redis store's compare-and-set step: a batch of requests on the same keys is decided on the
// states this isolate last saw, and one script call (redis-cas-script.js) sets the new states only if
// every key still holds the state decided on and the decision time is within `clockToleranceMs` of
// Redis's TIME. Otherwise the script returns the current states and TIME, and the batch is decided
// again on them, with the requests that queued behind it meanwhile (absorbed: one call for all). An
// isolate that lost twice in one batch reserves the keys for its next call, so that isolates nearer to
// Redis cannot starve it. So a warm key costs one round trip, a conflict one more, and the stored
// history of every key is a serial sequence of the core's own transitions.
//
// Contention: a refused call whose key another isolate wrote marks the key contended in this isolate;
// from then on a batch on that key alone goes in the key's log instead (redis-append-step.js: one round
// trip whatever the others do). A key's value is then its state and its log, which a compare-and-set
// expects and folds (redis-cas-script.js).
//
// A call that does not answer in time is given up (redis-given-up.js): each of its requests fails with
// a DeadlineError whose `late` promise gives that request's own decision if the call still lands.
import { DeadlineError } from "./deadline.js";
import { answerAppended, appendOnce, decideLate, entryFor, lateAppendedOutcome, parseAppendReply } from "./redis-append-step.js";
import { contextOf, releaseAll } from "./redis-batches.js";
import { appendable, asAsked } from "./redis-decide.js";
import { splitView, tagOfEntry, viewOf } from "./redis-values.js";

/** @import { Outcome } from "./store.js" */
/** @import { RedisStoreParts } from "./redis.js" */
/** @import { RedisLink } from "./redis-connection.js" */
/** @import { Decided, Waiting } from "./redis-decide.js" */
/** @typedef {import("./redis-batches.js").BatchUnderWay<Waiting>} Batch */
/**
 * One script call's decision; with one key and a batch a log entry can hold, the batch as an entry, which
 * the script appends instead of refusing if the states do not match (one round trip either way).
 * @typedef {{ states: string[], atMs: number, decided: Decided, next: string[], entry: { entry: string, liveMs: number } | null }} Attempt
 */

/**
 * decideBatch decides a batch (requests on the same keys, in the order they came) with as many script
 * calls as it takes, and answers each request (never rejects).
 * @param {RedisStoreParts} parts
 * @param {RedisLink} link
 * @param {readonly string[]} keys the batch's Redis keys, sorted
 * @param {Waiting[]} batch
 * @param {() => void} release lets this isolate's next call on the keys go; called before any request is answered
 * @returns {Promise<void>}
 */
export async function decideBatch(parts, link, keys, batch, release) {
  /** @type {Batch} */
  const under = { keys, batch, releases: [release] };
  try {
    await decideInCalls(parts, link, under);
  } catch (error) {
    releaseAll(under);
    for (const request of batch) request.reject(error);
  }
}

/**
 * decideBatch's calls: a refused call is sent again on the current states. Calls refused because
 * another isolate held a key do not count as attempts (the holder is about to succeed), but are bounded
 * too: a holder that died releases its hold after reserveMs.
 * @param {RedisStoreParts} parts
 * @param {RedisLink} link
 * @param {Batch} under
 * @returns {Promise<void>}
 */
async function decideInCalls(parts, link, under) {
  const { config, counters, cache } = parts;
  let states = under.keys.map((key) => cache.get(key));
  let refused = 0;
  for (let calls = 0; refused < config.maxAttempts && calls < 4 * config.maxAttempts; calls++) {
    if (appends(parts, under)) {
      if (await appendOnce(parts, link, under, states[0])) return;
      absorb(parts, under);
      continue;
    }
    const attempt = decideAttempt(parts, link, under, states);
    /** @type {unknown} */
    let reply;
    try {
      reply = await parts.connection.send(link, "cas", parts.names.scriptKeysOf(under.keys), argsOf(parts, link, attempt, refused >= 2), contextOf(under));
    } catch (error) {
      if (!(error instanceof DeadlineError) || !(/** @type {any} */ (error).late instanceof Promise)) throw error;
      return answerGivenUp(parts, under, attempt, /** @type {DeadlineError & { late: Promise<unknown> }} */ (error));
    }
    if (appendedInstead(reply) && attempt.entry !== null) return answerAppendedInstead(parts, under, attempt, reply);
    const [applied, redisNowMs, heldMs] = parseReply(reply, under.keys.length);
    if (applied) return answerApplied(parts, under, attempt);
    const current = currentViews(reply, under.keys.length);
    under.keys.forEach((key, u) => cache.remember(key, current[u]));
    absorb(parts, under);
    if (heldMs > 0) {
      counters.held++;
      await parts.connection.waitForHolder(heldMs);
    } else {
      refused++;
      countRefusal(parts, under, attempt, current, redisNowMs);
    }
    states = current;
  }
  counters.exhausted++;
  throw new Error(`redis store: ${config.maxAttempts} script calls in a row were refused (contention); not decided`);
}

/**
 * Counts why a call was refused: keys another isolate wrote since this one last saw them (or before
 * it ever did), which are then contended here, and a decision time too far from Redis's.
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 * @param {Attempt} attempt
 * @param {readonly string[]} current the keys' views the refusal returned
 * @param {number} redisNowMs
 */
function countRefusal(parts, under, attempt, current, redisNowMs) {
  const { counters, cache, config } = parts;
  const conflicted = under.keys.filter((_, u) => current[u] !== attempt.states[u]);
  if (conflicted.length > 0) counters.conflicts++;
  for (const key of conflicted) cache.markContended(key);
  if (Math.abs(attempt.atMs - redisNowMs) > config.clockToleranceMs) counters.clockRefusals++;
}

/**
 * The one-key call could not set and appended its entry instead: the batch is decided by replay, and
 * the key, if another isolate wrote it, is contended here (its next batches go straight to the log).
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 * @param {Attempt} attempt
 * @param {unknown} reply
 */
function answerAppendedInstead(parts, under, attempt, reply) {
  const appended = /** @type {NonNullable<ReturnType<typeof parseAppendReply>>} */ (parseAppendReply(reply));
  countRefusal(parts, under, attempt, [viewOf(appended.value, appended.log)], appended.nowMs);
  answerAppended(parts, under, appended, /** @type {NonNullable<Attempt["entry"]>} */ (attempt.entry).entry);
}

/**
 * Decides the batch on `states` at this isolate's estimate of Redis's clock, read now (when the call is
 * sent), and tags the new values.
 * @param {RedisStoreParts} parts
 * @param {RedisLink} link
 * @param {Batch} under
 * @param {string[]} states
 * @returns {Attempt}
 */
function decideAttempt(parts, link, under, states) {
  const { connection } = parts;
  const atMs = Math.round(connection.localTime() + (connection.offsetMs ?? 0));
  // A lease ends here no later than in Redis's clock, whatever this isolate's offset estimate missed
  // (at most half a round trip): a round trip shorter.
  const decided = parts.decider.decide(under.batch, under.keys, states, atMs, Math.ceil(connection.typicalRoundTripMs()));
  const next = decided.next.map((value, u) => (value === "" && !decided.folded[u] ? "" : parts.tags.tagged(value, link.caller)));
  const entry = under.keys.length === 1 && appendable(under.batch) ? entryFor(parts, link, under) : null;
  return { states, atMs, decided, next, entry };
}

/**
 * The script's arguments (redis-cas-script.js): time, tolerance, ticket, reservation, then per key
 * the expected value, log length and last entry's tag, the new value and its expiry.
 * @param {RedisStoreParts} parts
 * @param {RedisLink} link
 * @param {Attempt} attempt
 * @param {boolean} reserve
 * @returns {Array<string | number>}
 */
function argsOf(parts, link, attempt, reserve) {
  const { config } = parts;
  /** @type {Array<string | number>} */
  const args = [attempt.atMs, config.clockToleranceMs, link.caller, reserve ? config.reserveMs : 0];
  for (let u = 0; u < attempt.states.length; u++) {
    const { value, log } = splitView(attempt.states[u]);
    args.push(value, log.length, log.length === 0 ? "" : tagOfEntry(log[log.length - 1]), attempt.next[u], attempt.decided.expiresAtMs[u]);
  }
  if (attempt.entry !== null) args.push(attempt.entry.entry, attempt.entry.liveMs);
  return args;
}

/**
 * The call landed: remember the new values, let the next call go, answer every request.
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 * @param {Attempt} attempt
 */
function answerApplied(parts, under, attempt) {
  const { counters } = parts;
  under.keys.forEach((key, u) => parts.cache.remember(key, attempt.next[u] === "" ? attempt.states[u] : attempt.next[u]));
  counters.batches++;
  releaseAll(under);
  under.batch.forEach((request, r) => {
    const result = attempt.decided.results[r];
    if (result instanceof Error) return request.reject(result);
    counters.decisions++;
    request.resolve(/** @type {Outcome} */ ({ ...result, store: "redis" }));
  });
}

/**
 * The call was given up on: its requests fail with DeadlineErrors carrying their late decisions.
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 * @param {Attempt} attempt
 * @param {DeadlineError & { late: Promise<unknown> }} error
 */
function answerGivenUp(parts, under, attempt, error) {
  const { counters } = parts;
  releaseAll(under);
  const { keys } = under;
  const { states, atMs, next, decided } = attempt;
  const call = { keys, basis: states, requests: under.batch.map(asAsked), atMs, values: next, wrote: next.map((value) => value !== ""), expiresAtMs: decided.expiresAtMs };
  const settled = parts.givenUp.giveUp(call, error.late, (reply) => appendedInstead(reply) || parseReply(reply, keys.length)[0]).then((landed) => {
    if (landed !== null) counters.lateAnswered++;
    if (landed === true) counters.lateApplied++;
  });
  contextOf(under)?.waitUntil(settled);
  under.batch.forEach((request, r) => {
    const result = decided.results[r];
    if (result instanceof Error) return request.reject(result);
    const late = lateOf(parts, under, attempt, error.late, parts.givenUp.lateOutcome(call, r, { ...result, store: "redis" }), r);
    request.reject(Object.assign(new DeadlineError("redis", error.timeoutMs), { late }));
  });
}

/**
 * A given-up request's late decision: the compare-and-set's (`cas`), or, if the call appended its
 * entry instead, the decision replayed from its answer.
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 * @param {Attempt} attempt
 * @param {Promise<unknown>} answer the call's late answer
 * @param {Promise<Outcome>} cas
 * @param {number} r
 * @returns {Promise<Outcome>}
 */
function lateOf(parts, under, attempt, answer, cas, r) {
  if (attempt.entry === null) return cas;
  const late = answer.then((reply) => (appendedInstead(reply) ? lateAppendedOutcome(parts, decideLate(parts, under, reply), r) : cas));
  late.catch(() => {});
  return late;
}

/** @param {unknown} reply @returns {boolean} whether a compare-and-set appended its entry instead */
function appendedInstead(reply) {
  return Array.isArray(reply) && reply[0] === 2;
}

/**
 * Takes the requests queued behind the batch on the same keys into it (one call for all of them).
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 */
function absorb(parts, under) {
  const absorbed = parts.turns.absorb(under.keys, under.batch.length);
  if (absorbed === null) return;
  under.batch.push(...absorbed.requests);
  under.releases.push(absorbed.release);
}

/**
 * appends reports whether the batch goes in its key's log: one key, seen contended, and requests a log
 * entry can hold.
 * @param {RedisStoreParts} parts
 * @param {Batch} under
 */
function appends(parts, under) {
  return under.keys.length === 1 && parts.cache.isContended(under.keys[0]) && appendable(under.batch);
}

/**
 * The views a refused call's reply holds: each key's state, then its log.
 * @param {unknown} reply
 * @param {number} keyCount
 * @returns {string[]}
 */
function currentViews(reply, keyCount) {
  const values = /** @type {unknown[]} */ (reply);
  return Array.from({ length: keyCount }, (_, u) => viewOf(String(values[3 + u]), /** @type {unknown[]} */ (values[3 + keyCount + u]).map(String)));
}

/**
 * parseReply reads the script's reply.
 * @param {unknown} reply
 * @param {number} keyCount
 * @returns {[applied: boolean, redisNowMs: number, heldMs: number]}
 */
export function parseReply(reply, keyCount) {
  const valid = Array.isArray(reply) && (reply[0] === 1 || reply[0] === 0) && Number.isFinite(Number(reply[1]));
  const logs = valid && reply[0] === 0 ? reply.slice(3 + keyCount) : [];
  if (!valid || (reply[0] === 0 && (reply.length !== 2 * keyCount + 3 || !(Number(reply[2]) >= 0) || !logs.every(Array.isArray)))) {
    throw new Error("redis store: the script's reply is malformed");
  }
  return [reply[0] === 1, Number(reply[1]), reply[0] === 1 ? 0 : Number(reply[2])];
}
