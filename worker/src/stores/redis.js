// The Redis store: exact counting in Redis (Upstash, or any Redis behind the Upstash REST protocol),
// with the core's own arithmetic.
//
// Redis holds each (rule, key)'s state bytes, as the core exports them (base64 text, since the REST
// protocol is JSON, then a tag naming the write: `<state>.<tag>`). The isolate decides; Redis only
// arbitrates:
//  1. the isolate takes the last state it saw of each key (a bounded cache; "absent" for a key it has
//     not seen), imports it into a scratch core, decides the requests waiting on those keys, each in
//     turn and each all-or-nothing, at its estimate of Redis's clock, and exports the new states;
//  2. one script call (redis-cas-script.js, EVALSHA) sets the new states only if every key still
//     holds the state decided on and the decision time is within `clockToleranceMs` of Redis's TIME;
//  3. otherwise the script returns the current states and TIME, and the isolate decides the same
//     requests again on them, at that time. An isolate that lost twice in one call reserves the keys
//     for its next call, so that isolates nearer to Redis cannot starve it (redis-cas-script.js).
// So a warm key costs one round trip, a conflict (another isolate wrote since) one more, and the stored
// history of every key is a serial sequence of the core's own transitions: no isolate ever decides on a
// state that was not the latest. Denials and peeks are checked the same way (they write nothing).
//
// The store is split by concept: redis-options.js (defaults, checks, env), redis-connection.js (the
// REST client, round trips, timeouts, the clock offset), redis-batches.js (requests taking turns on
// their keys), redis-decide.js (the core's decisions in a scratch core), redis-cas-step.js (the
// compare-and-set calls), redis-given-up.js and redis-take-back.js (calls given up on), redis-values.js
// (what a key holds), redis-state-cache.js (the last values seen), redis-keys.js (key names). This file
// builds them and answers the store's interface.
//
// Batches: one script call per key is in flight from an isolate; the requests that arrive on the same
// keys meanwhile wait for it and then go together in the next call (redis-batches.js), decided one
// after the other on the same states: a burst costs two calls per isolate, and every request of it
// gets its own decision, exactly as if they had come one by one.
//
// Timeouts: each call may take what the endpoint's measured round trip says (round-trip.js: smoothed
// round trip plus four times its variation, per REST URL), or a fixed `timeoutMs`, counted from when
// the call is sent: waiting in the isolate for the call ahead is not Redis's slowness. The store bounds
// its own calls (`ownDeadline`, and `timeoutFor` says Infinity), so the fallback chain adds no deadline
// of its own around them. A call that does not answer in time is given up but not aborted: each of its
// requests fails with a DeadlineError whose `late` promise gives that request's own decision if the call
// still lands (the chain, which has answered it otherwise meanwhile, reconciles: the answered decision
// wins, and `takeBack(outcome)` takes back the charge of a late admission the chain denied; see
// redis-given-up.js). Its late answer is still a round-trip sample.
//
// Time: each isolate keeps the offset between Redis's TIME and its own clock, learnt from every reply
// (against the middle of the round trip, as NTP does), and decides at its clock plus that offset; a
// decision further than `clockToleranceMs` from TIME is refused (and decided again with the offset the
// refusal taught), so isolates whose clocks disagree still decide at (nearly) the same instants. The
// store reads its clock when a call is sent, not when the request arrived, so the offset and the
// decision time are both as fresh as they can be. Keys expire (PXAT) once the core says they are back to
// full quota, and never sooner than two windows after the decision, so idle keys leave Redis by
// themselves.
import { BatchDecider, pairsOf } from "./redis-decide.js";
import { KeyTurns } from "./redis-batches.js";
import { decideBatch } from "./redis-cas-step.js";
import { RedisConnection } from "./redis-connection.js";
import { GivenUpCalls } from "./redis-given-up.js";
import { RedisKeys } from "./redis-keys.js";
import { DEFAULT_REDIS_ENV, checkRedisOptions, isBound } from "./redis-options.js";
import { StateCache } from "./redis-state-cache.js";
import { takeBack } from "./redis-take-back.js";
import { WriteTags } from "./redis-values.js";
import { MAX_LISTED_BLOCKS, MAX_LISTED_KEY_CHARS } from "./block-list-table.js";
import { MAX_CHECKS_PER_CALL } from "../../../wasm-bindings/sluice.js";

/** @import { IsolateTable, Outcome, StoreCheck, StoreOptions, WaitUntilContext } from "./store.js" */
/** @import { RoundTrips } from "./round-trip.js" */
/** @import { Asked, Waiting } from "./redis-decide.js" */
/** @import { RedisConfig } from "./redis-options.js" */
/** @typedef {import("./redis-options.js").RedisStoreOptions} RedisStoreOptions */

export { DEFAULT_REDIS_ENV };

// The most requests one script call decides; more waiting on the same keys go in the next call.
const MAX_BATCH = 1000;
// The longest a request waits for its decision when timeoutMs is Infinity (10 minutes).
const MAX_WAIT_MS = 600_000;

/**
 * @typedef {object} RedisStoreCounters
 * @property {number} decisions Requests decided (each by one script call, with the others of its batch).
 * @property {number} batches Script calls that decided (applied); decisions / batches is the mean batch.
 * @property {number} roundTrips HTTP requests sent to the REST endpoint.
 * @property {number} conflicts Script calls refused because another isolate had written a key since this one last saw it.
 * @property {number} clockRefusals Script calls refused because the decision time was too far from Redis's TIME.
 * @property {number} held Script calls refused because another isolate held a key (it had lost twice); answered after a wait.
 * @property {number} exhausted Batches that gave up after maxAttempts refused script calls.
 * @property {number} givenUp Script calls that did not answer in time: their requests failed (the chain decided them).
 * @property {number} lateAnswered Given-up calls whose answer came after all (slow, not failed).
 * @property {number} lateApplied Of those, calls that landed (their requests were charged).
 * @property {number} undone Charges of given-up requests taken back (takeBack: the chain had denied them).
 * @property {number} undoMissed Charges takeBack could not take back (another isolate wrote over the call's write first).
 * @property {number} appends Batches decided by appending to a contended key's log (one round trip each, never refused
 *   for a stale state; included in batches).
 * @property {number} overdue Calls that went while the call ahead still held their keys past its bound (in workerd: a
 *   request cancelled mid-call never lets go).
 */
/**
 * The exact store over Redis (Upstash REST protocol). Decisions are taken at Redis's time; decide and
 * reset need options.env when the URL or token come from env.
 * @typedef {{
 *   readonly name: "redis";
 *   readonly ownDeadline: true;
 *   timeoutFor(checks: readonly StoreCheck[]): number;
 *   takeBack(outcome: Outcome): Promise<{ undone: number, missed: number }>;
 *   readonly counters: Readonly<RedisStoreCounters>;
 *   readonly roundTrip: RoundTrips["summary"];
 *   decide(checks: readonly StoreCheck[], options?: StoreOptions): Promise<Outcome>;
 *   refill(checks: readonly StoreCheck[], options: { env?: unknown, ctx?: WaitUntilContext, lend: { wanted: number[], leaseMs: number }, giveBack?: Asked["giveBack"] }): Promise<{ leases: Array<object | null>, returned: number[] | null, resetMs: number[] }>;
 *   objectOf(key: string): string;
 *   reset(checks: readonly StoreCheck[], options?: StoreOptions): Promise<void>;
 *   readonly blockList: import("./block-list-table.js").BlockListStore;
 *   isolateTables(): IsolateTable[];
 *   isBound(env: unknown): boolean;
 * }} RedisStore
 */
/**
 * The store's state, one small object the steps (redis-cas-step.js, redis-take-back.js) take.
 * @typedef {object} RedisStoreParts
 * @property {RedisConfig} config
 * @property {RedisStoreCounters} counters
 * @property {RedisConnection} connection
 * @property {StateCache} cache
 * @property {KeyTurns<Waiting>} turns
 * @property {GivenUpCalls} givenUp
 * @property {BatchDecider} decider
 * @property {RedisKeys} names
 * @property {WriteTags} tags
 */

/**
 * createRedisStore returns a store that decides exactly, with state kept in Redis and reached over the
 * Upstash REST protocol. Configuration read from env is checked at first use; a missing or invalid URL
 * or token throws a SluiceConfigError naming the env variable (the token's value is never shown).
 * Decisions are taken at Redis's time (options.nowMs is not used); decide needs options.env when the
 * URL or token come from env.
 * @param {RedisStoreOptions} [options]
 * @returns {RedisStore}
 */
export function createRedisStore(options = {}) {
  const parts = createParts(checkRedisOptions(options));
  const { config, counters, connection } = parts;
  return {
    name: "redis",
    ownDeadline: true,
    /** The store bounds each of its calls itself, from its send: a chain around it waits as long as it does. */
    timeoutFor: () => Infinity,
    takeBack: (outcome) => takeBack(parts, outcome),
    counters,
    get roundTrip() {
      return connection.roundTrips.summary;
    },
    decide: (checks, decideOptions) => decide(parts, checks, decideOptions),
    refill: (checks, refillOptions) => refill(parts, checks, refillOptions),
    objectOf,
    reset: (checks, resetOptions) => reset(parts, checks, resetOptions),
    blockList: redisBlockList(parts),
    /** The scratch core is emptied after every decision: nothing counts in the isolate. */
    isolateTables: () => [],
    /** @param {unknown} env */
    isBound: (env) => isBound(config, env),
  };
}

/**
 * @param {RedisConfig} config
 * @returns {RedisStoreParts}
 */
function createParts(config) {
  const counters = /** @type {RedisStoreCounters} */ ({
    decisions: 0,
    batches: 0,
    roundTrips: 0,
    conflicts: 0,
    clockRefusals: 0,
    held: 0,
    exhausted: 0,
    givenUp: 0,
    lateAnswered: 0,
    lateApplied: 0,
    undone: 0,
    undoMissed: 0,
    appends: 0,
  });
  const connection = new RedisConnection(config, counters);
  /** @type {KeyTurns<Waiting>} */
  const turns = new KeyTurns(MAX_BATCH, () => connection.batchBoundMs(connection.endpoint));
  Object.defineProperty(counters, "overdue", { get: () => turns.overdue, enumerable: true });
  const names = new RedisKeys(config.prefix);
  return {
    config,
    counters,
    connection,
    cache: new StateCache(config.maxCachedKeys),
    turns,
    givenUp: new GivenUpCalls(),
    decider: new BatchDecider(names, config.clockToleranceMs),
    names,
    tags: new WriteTags(),
  };
}

/**
 * decide checks every (rule, key, cost) of one request, all-or-nothing, at Redis's time. It waits
 * for this isolate's call ahead on the same keys, then goes in the next call with the requests that
 * waited with it. With leases (leases.js), options.lend and options.giveBack borrow and return units
 * in the same call (the outcome then has `leases` and `returned`).
 * @param {RedisStoreParts} parts
 * @param {readonly StoreCheck[]} checks
 * @param {StoreOptions & { lend?: Asked["lend"], giveBack?: Asked["giveBack"] }} [decideOptions]
 * @returns {Promise<Outcome>}
 */
function decide(parts, checks, decideOptions = {}) {
  const { peek = false, lend, giveBack } = decideOptions;
  return ask(parts, { checks, peek, ...(lend === undefined ? {} : { lend }), ...(giveBack === undefined ? {} : { giveBack }) }, decideOptions);
}

/**
 * refill borrows units of the checks' keys for this isolate's leases (options.lend), returning
 * options.giveBack first, without deciding a request: { leases, returned, resetMs } (leases.js).
 * @param {RedisStoreParts} parts
 * @param {readonly StoreCheck[]} checks
 * @param {{ env?: unknown, ctx?: WaitUntilContext, lend: NonNullable<Asked["lend"]>, giveBack?: Asked["giveBack"] }} refillOptions
 * @returns {Promise<{ leases: Array<object | null>, returned: number[] | null, resetMs: number[] }>}
 */
function refill(parts, checks, refillOptions) {
  const { lend, giveBack } = refillOptions;
  return /** @type {Promise<any>} */ (ask(parts, { checks, peek: false, lend, refill: true, ...(giveBack === undefined ? {} : { giveBack }) }, refillOptions));
}

/**
 * ask queues one request on its keys (redis-batches.js): it goes in the next call on them, with the
 * requests that queued with it.
 * @param {RedisStoreParts} parts
 * @param {Asked} asked
 * @param {{ env?: unknown, ctx?: WaitUntilContext }} options
 * @returns {Promise<any>}
 */
async function ask(parts, asked, options) {
  const { env, ctx } = options;
  checkAsked(asked);
  const link = await parts.connection.link(env); // config errors throw here, before any request
  const keys = parts.names.redisKeysOf(pairsOf(asked));
  return new Promise((outcome, failure) => {
    // A bound on the wait, and (in workerd) what keeps this request alive while another request's
    // call decides it: a request with nothing of its own pending is cancelled as hung.
    const waitMs = Math.min(2 * parts.connection.batchBoundMs(link.endpoint), MAX_WAIT_MS);
    const watchdog = setTimeout(() => failure(new Error(`redis store: not decided within ${waitMs} ms (the call deciding it never answered)`)), waitMs);
    /** @param {unknown} value */
    const resolve = (value) => {
      clearTimeout(watchdog);
      outcome(value);
    };
    /** @param {unknown} error */
    const reject = (error) => {
      clearTimeout(watchdog);
      failure(error);
    };
    parts.turns.join(keys, { ...asked, ctx, resolve, reject }, (batch, release) => {
      const done = decideBatch(parts, link, keys, batch, release);
      // The batch's call runs in its first request's context: if that client goes away, the call
      // must still finish for the others (in workerd, a cancelled request's work is dropped).
      batch[0].ctx?.waitUntil(done);
      return done;
    });
  });
}

/** @param {Asked} asked */
function checkAsked({ checks, giveBack }) {
  if (!Array.isArray(checks) || checks.length < 1 || checks.length > MAX_CHECKS_PER_CALL) {
    throw new RangeError(`checks must be an array of 1 to ${MAX_CHECKS_PER_CALL} checks`);
  }
  if (giveBack !== undefined && (!Array.isArray(giveBack) || checks.length + giveBack.length > MAX_CHECKS_PER_CALL)) {
    throw new RangeError(`giveBack must be an array of at most ${MAX_CHECKS_PER_CALL - checks.length} units to return with these checks`);
  }
}

/**
 * Which lender holds `key`, for leases.js (it returns units with the next call to the same one): a
 * key's own Redis keys, so any call on the key can take them.
 * @param {string} key
 * @returns {string}
 */
function objectOf(key) {
  return key;
}

/**
 * The deployment's list of auto-blocks in Redis (block-list-table.js): one sorted set, `<prefix>b`
 * (apart from every key's `s:`, `h:` and `l:`), whose members are [rule, key] as JSON, scored by the
 * block's end. Noting drops the ended ones and, past MAX_LISTED_BLOCKS, those ending first.
 * @param {RedisStoreParts} parts
 * @returns {import("./block-list-table.js").BlockListStore}
 */
function redisBlockList(parts) {
  const set = `${parts.config.prefix}b`;
  return {
    async note({ rule, key, untilMs }, { nowMs, env }) {
      if (key.length > MAX_LISTED_KEY_CHARS) throw new RangeError(`key must be at most ${MAX_LISTED_KEY_CHARS} characters`);
      const send = parts.connection.commandSender(env);
      // GT: a later end replaces an earlier one, never the reverse.
      await send(["ZADD", set, "GT", untilMs, JSON.stringify([rule, key])]);
      await send(["ZREMRANGEBYSCORE", set, "-inf", nowMs]);
      await send(["ZREMRANGEBYRANK", set, 0, -(MAX_LISTED_BLOCKS + 1)]);
    },
    async list({ nowMs, env }) {
      const reply = await parts.connection.commandSender(env)(["ZRANGEBYSCORE", set, `(${nowMs}`, "+inf", "WITHSCORES", "LIMIT", 0, MAX_LISTED_BLOCKS]);
      const flat = Array.isArray(reply) ? reply : [];
      const blocks = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const [rule, key] = JSON.parse(String(flat[i]));
        blocks.push({ rule: String(rule), key: String(key), untilMs: Number(flat[i + 1]) });
      }
      return blocks;
    },
    async forget(rule, key, { env }) {
      await parts.connection.commandSender(env)(["ZREM", set, JSON.stringify([rule, key])]);
    },
  };
}

/**
 * reset forgets the keys of `checks` (back to their full quota) in Redis, in one round trip, after
 * this isolate's calls on them. An isolate that still remembers an older state finds the key gone at
 * its next call and decides again.
 * @param {RedisStoreParts} parts
 * @param {readonly StoreCheck[]} checks
 * @param {StoreOptions} [resetOptions]
 * @returns {Promise<void>}
 */
async function reset(parts, checks, resetOptions = {}) {
  const send = parts.connection.commandSender(resetOptions.env);
  const keys = parts.names.redisKeysOf(checks);
  await parts.turns.turn(keys, async () => {
    await send(["DEL", ...keys, ...keys.map((key) => parts.names.logKeyOf(key))]);
    for (const key of keys) parts.cache.forget(key);
  });
}
