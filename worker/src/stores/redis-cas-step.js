// The Redis store's compare-and-set step: a batch of requests on the same keys is decided on the
// states this isolate last saw, and one script call (redis-cas-script.js) sets the new states only if
// every key still holds the state decided on and the decision time is within `clockToleranceMs` of
// Redis's TIME. Otherwise the script returns the current states and TIME, and the batch is decided
// again on them, with the requests that queued behind it meanwhile (absorbed: one call for all). An
// isolate that lost twice in one batch reserves the keys for its next call, so that isolates nearer to
// Redis cannot starve it. So a warm key costs one round trip, a conflict one more, and the stored
// history of every key is a serial sequence of the core's own transitions.
//
// A call that does not answer in time is given up (redis-given-up.js): each of its requests fails with
// a DeadlineError whose `late` promise gives that request's own decision if the call still lands.
import { DeadlineError } from "./deadline.js";
import { asAsked } from "./redis-decide.js";

/** @import { Outcome } from "./store.js" */
/** @import { RedisStoreParts } from "./redis.js" */
/** @import { RedisLink } from "./redis-connection.js" */
/** @import { Decided, Waiting } from "./redis-decide.js" */
/**
 * One batch under way: its keys, its requests (growing with absorbed ones), and the releases that let
 * this isolate's next calls on the keys go.
 * @typedef {{ keys: readonly string[], batch: Waiting[], releases: Array<() => void> }} Batch
 */
/** @typedef {{ states: string[], atMs: number, decided: Decided, next: string[] }} Attempt one script call's decision */

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
    const attempt = decideAttempt(parts, link, under, states);
    /** @type {unknown} */
    let reply;
    try {
      reply = await parts.connection.send(link, parts.names.scriptKeysOf(under.keys), argsOf(parts, link, attempt, refused >= 2), ctxOf(under));
    } catch (error) {
      if (!(error instanceof DeadlineError) || !(/** @type {any} */ (error).late instanceof Promise)) throw error;
      return answerGivenUp(parts, under, attempt, /** @type {DeadlineError & { late: Promise<unknown> }} */ (error));
    }
    const [applied, redisNowMs, heldMs] = parseReply(reply, under.keys.length);
    if (applied) return answerApplied(parts, under, attempt);
    const current = /** @type {unknown[]} */ (reply).slice(3).map(String);
    under.keys.forEach((key, u) => cache.remember(key, current[u]));
    absorb(parts, under);
    if (heldMs > 0) {
      counters.held++;
      await parts.connection.waitForHolder(heldMs);
    } else {
      refused++;
      if (current.some((value, u) => value !== states[u])) counters.conflicts++;
      if (Math.abs(attempt.atMs - redisNowMs) > config.clockToleranceMs) counters.clockRefusals++;
    }
    states = current;
  }
  counters.exhausted++;
  throw new Error(`redis store: ${config.maxAttempts} script calls in a row were refused (contention); not decided`);
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
  const next = decided.next.map((value) => (value === "" ? "" : parts.tags.tagged(value, link.caller)));
  return { states, atMs, decided, next };
}

/**
 * The script's arguments (redis-cas-script.js): time, tolerance, ticket, reservation, then per key
 * the expected value, the new one and its expiry.
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
  for (let u = 0; u < attempt.states.length; u++) args.push(attempt.states[u], attempt.next[u], attempt.decided.expiresAtMs[u]);
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
  const settled = parts.givenUp.giveUp(call, error.late, (reply) => parseReply(reply, keys.length)[0]).then((landed) => {
    if (landed !== null) counters.lateAnswered++;
    if (landed === true) counters.lateApplied++;
  });
  ctxOf(under)?.waitUntil(settled);
  under.batch.forEach((request, r) => {
    const result = decided.results[r];
    if (result instanceof Error) return request.reject(result);
    request.reject(Object.assign(new DeadlineError("redis", error.timeoutMs), { late: parts.givenUp.lateOutcome(call, r, { ...result, store: "redis" }) }));
  });
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

/** @param {Batch} under */
function releaseAll(under) {
  for (const release of under.releases) release();
}

/** @param {Batch} under the context the batch's calls run in: its first request's that has one */
function ctxOf(under) {
  return under.batch.find((request) => request.ctx !== undefined)?.ctx;
}

/**
 * parseReply reads the script's reply.
 * @param {unknown} reply
 * @param {number} keyCount
 * @returns {[applied: boolean, redisNowMs: number, heldMs: number]}
 */
export function parseReply(reply, keyCount) {
  const valid = Array.isArray(reply) && (reply[0] === 1 || reply[0] === 0) && Number.isFinite(Number(reply[1]));
  if (!valid || (reply[0] === 0 && (reply.length !== keyCount + 3 || !(Number(reply[2]) >= 0)))) {
    throw new Error("redis store: the script's reply is malformed");
  }
  return [reply[0] === 1, Number(reply[1]), reply[0] === 1 ? 0 : Number(reply[2])];
}
