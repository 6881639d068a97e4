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
import { nowMs as wallClockMs } from "../engine/clock.js";
import { SluiceConfigError, describe } from "../engine/errors.js";
import { DeadlineError, checkTimeout, withDeadline } from "./deadline.js";
import { KeyTurns } from "./redis-batches.js";
import { REDIS_CAS_SCRIPT } from "./redis-cas-script.js";
import { GivenUpCalls } from "./redis-given-up.js";
import { RoundTrips, checkRoundTripOptions } from "./round-trip.js";
import { RuleCore } from "./rule-core.js";
import { createUpstashRestClient, sha1Hex } from "./upstash-rest.js";
import { LENDING_ALGORITHMS, MAX_CHECKS_PER_CALL, SluiceError, Status, WINDOW_LENDING_ALGORITHMS } from "../../../wasm-bindings/sluice.js";

/** @import { IsolateTable, Outcome, StoreCheck, StoreOptions, WaitUntilContext } from "./store.js" */
/** @import { UpstashRestClient } from "./upstash-rest.js" */
/** @import { RoundTripOptions } from "./round-trip.js" */
/** @import { GivenUpCall } from "./redis-given-up.js" */
/** @import { SluiceCore } from "../../../wasm-bindings/sluice.js" */
/**
 * What one request asks of a script call: its checks; with leases (leases.js), units to give back
 * first and units to borrow once admitted (a refill borrows without deciding anything).
 * @typedef {{
 *   checks: readonly StoreCheck[],
 *   peek: boolean,
 *   lend?: { wanted: number[], leaseMs: number },
 *   giveBack?: ReadonlyArray<{ rule: import("./store.js").NormalizedRule, key: string, units: number, expiresAtMs: number }>,
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
 * key's new value ("" to leave it as it is) and when it expires.
 * @typedef {{ results: Array<Outcome | Error>, next: string[], expiresAtMs: number[] }} Decided
 */

/** The env variables the REST URL and token are read from, by default (Upstash's own names). */
export const DEFAULT_REDIS_ENV = Object.freeze({ url: "UPSTASH_REDIS_REST_URL", token: "UPSTASH_REDIS_REST_TOKEN" });

// The scratch core holds one call's keys (at most 16) and is emptied after every decision.
const SCRATCH_KEYS_PER_RULE = 64;
// The most requests one script call decides; more waiting on the same keys go in the next call.
const MAX_BATCH = 1000;
// The script's new value that deletes a key (taking back a write that replaced an absent key).
const DELETE = "-";
// The learnt timeout's settings for Redis (round-trip.js's defaults, but for the first call): an
// isolate's first call to the REST URL opens a TLS connection (two or three round trips) and may find
// the script not loaded (EVALSHA, then EVAL), so it takes up to five round trips: 2.5 s holds a Redis
// 250 ms +-20 % away, where round-trip.js's 1 s would give it up (a denial, by default).
const REDIS_ROUND_TRIP = Object.freeze({ initialTimeoutMs: 2500 });
// The longest a request waits for its decision when timeoutMs is Infinity (10 minutes).
const MAX_WAIT_MS = 600_000;
// How many times taking back a late write may be refused because another isolate holds the key.
const UNDO_ATTEMPTS = 3;

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
 *   isolateTables(): IsolateTable[];
 *   isBound(env: unknown): boolean;
 * }} RedisStore
 */
/**
 * @typedef {object} RedisStoreOptions
 * @property {string} [url] The REST URL; default: read from env[urlEnv] at first use.
 * @property {string} [token] The REST token; default: read from env[tokenEnv] at first use.
 * @property {string} [urlEnv] The env variable holding the URL. Default "UPSTASH_REDIS_REST_URL".
 * @property {string} [tokenEnv] The env variable holding the token. Default "UPSTASH_REDIS_REST_TOKEN".
 * @property {string} [prefix] Prepended to every Redis key. Default "sluice:".
 * @property {number} [clockToleranceMs] How far a decision's time may be from Redis's TIME. Default 250.
 * @property {number} [maxAttempts] Refused script calls per batch before giving up (the chain then falls back). Default 16.
 * @property {number} [reserveMs] How long an isolate that lost twice holds the keys for its next call. Default 1000.
 * @property {number} [maxCachedKeys] How many keys' last states the isolate remembers. Default 10000.
 * @property {number} [timeoutMs] Give a script call up after this long from its send (Infinity: wait). Default: learnt
 *   per REST URL from the measured round trips (`roundTrip`).
 * @property {RoundTripOptions} [roundTrip] The learnt timeout's settings. Default { initialTimeoutMs: 2500, floorMs: 200,
 *   minTimeoutMs: 300, maxTimeoutMs: 5000 } (round-trip.js's, but for the first call).
 * @property {typeof fetch} [fetch] The fetch function. Default globalThis.fetch.
 * @property {() => number} [clock] This isolate's clock (ms since the epoch). Default: the wall clock.
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
  const {
    url,
    token,
    urlEnv = DEFAULT_REDIS_ENV.url,
    tokenEnv = DEFAULT_REDIS_ENV.token,
    prefix = "sluice:",
    clockToleranceMs = 250,
    maxAttempts = 16,
    reserveMs = 1000,
    maxCachedKeys = 10_000,
    timeoutMs,
    roundTrip,
    fetch: fetchFn,
    clock = wallClockMs,
  } = options;
  if (url !== undefined) checkUrl(url, "url");
  if (token !== undefined) checkToken(token, "token");
  checkName(urlEnv, "urlEnv");
  checkName(tokenEnv, "tokenEnv");
  if (typeof prefix !== "string") throw new SluiceConfigError("prefix", `must be a string; got ${describe(prefix)}`);
  if (typeof clockToleranceMs !== "number" || !(clockToleranceMs > 0) || clockToleranceMs === Infinity) {
    throw new SluiceConfigError("clockToleranceMs", `must be a finite number of milliseconds > 0; got ${describe(clockToleranceMs)}`);
  }
  checkWhole(maxAttempts, "maxAttempts");
  checkWhole(reserveMs, "reserveMs");
  checkWhole(maxCachedKeys, "maxCachedKeys");
  if (timeoutMs !== undefined) checkTimeout(timeoutMs, "timeoutMs");
  const roundTrips = new RoundTrips(checkRoundTripOptions({ ...REDIS_ROUND_TRIP, ...roundTrip }, "roundTrip"));
  if (fetchFn !== undefined && typeof fetchFn !== "function") throw new SluiceConfigError("fetch", `must be a function; got ${describe(fetchFn)}`);
  if (typeof clock !== "function") throw new SluiceConfigError("clock", `must be a function returning ms since the epoch; got ${describe(clock)}`);

  const rules = new RuleCore((rule) => ({
    algorithm: rule.algorithm,
    limit: rule.limit,
    windowMs: rule.windowMs,
    burst: rule.burst,
    blockMs: rule.blockMs ?? 0,
    keyCapacity: SCRATCH_KEYS_PER_RULE,
  }));
  /** @type {RedisStoreCounters} */
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
  });
  /** @type {Map<string, string>} Redis key -> the last value seen ("" for absent), least recently used first */
  const cache = new Map();
  /** @type {KeyTurns<Waiting>} */
  const turns = new KeyTurns(MAX_BATCH, () => batchBoundMs(client?.url ?? ""));
  Object.defineProperty(counters, "overdue", { get: () => turns.overdue, enumerable: true });
  const givenUp = new GivenUpCalls();
  /** @type {{ url: string, token: string, rest: UpstashRestClient } | null} */
  let client = null;
  /** @type {Promise<string> | null} */
  let shaPromise = null;
  /** @type {number | null} Redis's TIME minus this isolate's clock, as last measured */
  let offsetMs = null;
  /** @type {string | null} names this store's holds (made at first use: no randomness at global scope) */
  let ticket = null;
  let writes = 0; // numbers this store's writes, for their tags

  /**
   * The client for the URL and token in effect: built at first use, and again if env's values change.
   * @param {unknown} env
   * @returns {{ url: string, rest: UpstashRestClient }}
   */
  function clientFor(env) {
    const resolvedUrl = url ?? fromEnv(env, urlEnv);
    const resolvedToken = token ?? fromEnv(env, tokenEnv);
    if (client !== null && client.url === resolvedUrl && client.token === resolvedToken) return client;
    if (url === undefined) checkUrl(resolvedUrl, `env.${urlEnv}`);
    if (token === undefined) checkToken(resolvedToken, `env.${tokenEnv}`);
    const rest = createUpstashRestClient({
      url: resolvedUrl,
      token: resolvedToken,
      fetch: fetchFn ?? ((...args) => globalThis.fetch(...args)),
      onRoundTrip: () => counters.roundTrips++,
    });
    client = { url: resolvedUrl, token: resolvedToken, rest };
    return client;
  }

  /**
   * decide checks every (rule, key, cost) of one request, all-or-nothing, at Redis's time. It waits
   * for this isolate's call ahead on the same keys, then goes in the next call with the requests that
   * waited with it. With leases (leases.js), options.lend and options.giveBack borrow and return units
   * in the same call (the outcome then has `leases` and `returned`).
   * @param {readonly StoreCheck[]} checks
   * @param {StoreOptions & { lend?: Asked["lend"], giveBack?: Asked["giveBack"] }} [decideOptions]
   * @returns {Promise<Outcome>}
   */
  function decide(checks, decideOptions = {}) {
    const { peek = false, lend, giveBack } = decideOptions;
    return ask({ checks, peek, ...(lend === undefined ? {} : { lend }), ...(giveBack === undefined ? {} : { giveBack }) }, decideOptions);
  }

  /**
   * refill borrows units of the checks' keys for this isolate's leases (options.lend), returning
   * options.giveBack first, without deciding a request: { leases, returned, resetMs } (leases.js).
   * @param {readonly StoreCheck[]} checks
   * @param {{ env?: unknown, ctx?: WaitUntilContext, lend: NonNullable<Asked["lend"]>, giveBack?: Asked["giveBack"] }} refillOptions
   * @returns {Promise<{ leases: Array<object | null>, returned: number[] | null, resetMs: number[] }>}
   */
  function refill(checks, refillOptions) {
    const { lend, giveBack } = refillOptions;
    return /** @type {Promise<any>} */ (ask({ checks, peek: false, lend, refill: true, ...(giveBack === undefined ? {} : { giveBack }) }, refillOptions));
  }

  /**
   * @param {Asked} asked
   * @param {{ env?: unknown, ctx?: WaitUntilContext }} options
   * @returns {Promise<any>}
   */
  async function ask(asked, options) {
    const { env, ctx } = options;
    const { checks, giveBack } = asked;
    if (!Array.isArray(checks) || checks.length < 1 || checks.length > MAX_CHECKS_PER_CALL) {
      throw new RangeError(`checks must be an array of 1 to ${MAX_CHECKS_PER_CALL} checks`);
    }
    if (giveBack !== undefined && (!Array.isArray(giveBack) || checks.length + giveBack.length > MAX_CHECKS_PER_CALL)) {
      throw new RangeError(`giveBack must be an array of at most ${MAX_CHECKS_PER_CALL - checks.length} units to return with these checks`);
    }
    const { url: endpoint, rest } = clientFor(env); // config errors throw here, before any request
    const sha = await (shaPromise ??= sha1Hex(REDIS_CAS_SCRIPT));
    const caller = (ticket ??= crypto.randomUUID());
    const keys = redisKeysOf(pairsOf(asked));
    return new Promise((outcome, failure) => {
      // A bound on the wait, and (in workerd) what keeps this request alive while another request's
      // call decides it: a request with nothing of its own pending is cancelled as hung.
      const waitMs = Math.min(2 * batchBoundMs(endpoint), MAX_WAIT_MS);
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
      turns.join(keys, { ...asked, ctx, resolve, reject }, (batch, release) => {
        const done = decideBatch({ rest, sha, caller, endpoint }, keys, batch, release);
        // The batch's call runs in its first request's context: if that client goes away, the call
        // must still finish for the others (in workerd, a cancelled request's work is dropped).
        batch[0].ctx?.waitUntil(done);
        return done;
      });
    });
  }

  /**
   * Decides a batch (requests on the same keys, in the order they came) with as many script calls as
   * it takes, and answers each request (never rejects).
   * @param {{ rest: UpstashRestClient, sha: string, caller: string, endpoint: string }} link
   * @param {readonly string[]} keys the batch's Redis keys, sorted
   * @param {Waiting[]} batch
   * @param {() => void} release lets this isolate's next call on the keys go; called before any request is answered
   * @returns {Promise<void>}
   */
  async function decideBatch(link, keys, batch, release) {
    /** @type {Array<() => void>} */
    const releases = [release];
    const releaseAll = () => {
      for (const r of releases) r();
    };
    try {
      await decideInCalls(link, keys, batch, releases, releaseAll);
    } catch (error) {
      releaseAll();
      for (const request of batch) request.reject(error);
    }
  }

  /**
   * decideBatch's calls: a refused call is sent again with the requests that queued behind it on the
   * same keys meanwhile (absorbed into the batch: one call for all of them).
   * @param {{ rest: UpstashRestClient, sha: string, caller: string, endpoint: string }} link
   * @param {readonly string[]} keys
   * @param {Waiting[]} batch grows with absorbed requests
   * @param {Array<() => void>} releases grows with the absorbed batches' releases
   * @param {() => void} releaseAll
   * @returns {Promise<void>}
   */
  async function decideInCalls(link, keys, batch, releases, releaseAll) {
    const n = keys.length;
    const scriptKeys = [...keys, ...keys.map(holdKeyOf)];
    let states = keys.map((key) => cache.get(key) ?? "");
    const ctx = batch.find((request) => request.ctx !== undefined)?.ctx;
    let refused = 0;
    const absorb = () => {
      const absorbed = turns.absorb(keys, batch.length);
      if (absorbed === null) return;
      batch.push(...absorbed.requests);
      releases.push(absorbed.release);
    };
    // Calls refused because another isolate held a key do not count as attempts (the holder is about
    // to succeed), but are bounded too: a holder that died releases its hold after reserveMs.
    for (let calls = 0; refused < maxAttempts && calls < 4 * maxAttempts; calls++) {
      const sentAtMs = localTime();
      const atMs = Math.round(sentAtMs + (offsetMs ?? 0));
      const decided = decideOn(batch, keys, states, atMs);
      const { results, expiresAtMs } = decided;
      const next = decided.next.map((value) => (value === "" ? "" : tagged(value, link.caller)));
      /** @type {Array<string | number>} */
      const args = [atMs, clockToleranceMs, link.caller, refused >= 2 ? reserveMs : 0];
      for (let u = 0; u < n; u++) args.push(states[u], next[u], expiresAtMs[u]);
      /** @type {unknown} */
      let reply;
      try {
        reply = await send(link, scriptKeys, args, ctx);
      } catch (error) {
        if (!(error instanceof DeadlineError) || !(/** @type {any} */ (error).late instanceof Promise)) throw error;
        releaseAll();
        const call = { keys, basis: states, requests: batch.map(asAsked), atMs, values: next, wrote: next.map((value) => value !== ""), expiresAtMs };
        const settled = givenUp.giveUp(call, /** @type {any} */ (error).late, (reply) => parseReply(reply, n)[0]).then((landed) => {
          if (landed !== null) counters.lateAnswered++;
          if (landed === true) counters.lateApplied++;
        });
        ctx?.waitUntil(settled);
        for (let r = 0; r < batch.length; r++) {
          const result = results[r];
          if (result instanceof Error) batch[r].reject(result);
          else batch[r].reject(Object.assign(new DeadlineError("redis", error.timeoutMs), { late: givenUp.lateOutcome(call, r, { ...result, store: "redis" }) }));
        }
        return;
      }
      const [applied, redisNowMs, heldMs] = parseReply(reply, n);
      if (applied) {
        for (let u = 0; u < n; u++) remember(keys[u], next[u] === "" ? states[u] : next[u]);
        counters.batches++;
        releaseAll();
        for (let r = 0; r < batch.length; r++) {
          const result = results[r];
          if (result instanceof Error) batch[r].reject(result);
          else {
            counters.decisions++;
            batch[r].resolve(/** @type {Outcome} */ ({ ...result, store: "redis" }));
          }
        }
        return;
      }
      const current = /** @type {unknown[]} */ (reply).slice(3).map(String);
      for (let u = 0; u < n; u++) remember(keys[u], current[u]);
      if (heldMs > 0) {
        counters.held++;
        states = current;
        absorb();
        // The holder needs about one round trip; never wait past its hold.
        await sleep(Math.min(heldMs, typicalRoundTripMs()));
        continue;
      }
      refused++;
      absorb();
      if (current.some((value, u) => value !== states[u])) counters.conflicts++;
      if (Math.abs(atMs - redisNowMs) > clockToleranceMs) counters.clockRefusals++;
      states = current;
    }
    counters.exhausted++;
    throw new Error(`redis store: ${maxAttempts} script calls in a row were refused (contention); not decided`);
  }

  /**
   * Sends one script call, bounded by the timeout (counted from the send), and learns Redis's clock
   * offset and the round trip from its answer. A call not answered in time is given up, not aborted:
   * the DeadlineError it rejects with carries `late`, the promise of its answer.
   * @param {{ rest: UpstashRestClient, sha: string, endpoint: string }} link
   * @param {string[]} scriptKeys
   * @param {Array<string | number>} args
   * @param {WaitUntilContext | undefined} ctx
   * @returns {Promise<unknown>}
   */
  async function send(link, scriptKeys, args, ctx) {
    const sentAtMs = localTime();
    const answer = link.rest.evalScript(REDIS_CAS_SCRIPT, link.sha, scriptKeys, args).then((reply) => {
      const receivedAtMs = localTime();
      roundTrips.sample(link.endpoint, receivedAtMs - sentAtMs); // a late answer is a round trip too
      if (Array.isArray(reply) && Number.isFinite(Number(reply[1]))) offsetMs = Number(reply[1]) - (sentAtMs + receivedAtMs) / 2;
      return reply;
    });
    answer.catch(() => {});
    const limitMs = timeoutMs ?? roundTrips.timeoutMs(link.endpoint);
    try {
      return await withDeadline(answer, limitMs, "redis");
    } catch (error) {
      if (!(error instanceof DeadlineError)) throw error;
      counters.givenUp++;
      roundTrips.timedOut(link.endpoint);
      // Keep the call alive past the requests that gave up on it: its answer is still a sample.
      ctx?.waitUntil(answer.catch(() => {}));
      throw Object.assign(new DeadlineError("redis", limitMs), { late: answer });
    }
  }

  /**
   * takeBack takes back the charge of a given-up request whose late outcome (from its DeadlineError's
   * `late`) admitted it while the fallback chain answered otherwise: the key is set to what the call
   * would have written without that request (and without any taken back before), if it still holds
   * the call's write. Another isolate's write over it first leaves the charge (missed).
   * @param {Outcome} outcome
   * @returns {Promise<{ undone: number, missed: number }>}
   */
  async function takeBack(outcome) {
    const found = givenUp.find(outcome);
    if (found === null) return { undone: 0, missed: 0 }; // not a late outcome of a call that landed
    const { call, index } = found;
    if (call.takenBack?.has(index)) return { undone: 0, missed: 0 }; // already taken back
    const link = client === null ? null : { rest: client.rest, sha: await (shaPromise ??= sha1Hex(REDIS_CAS_SCRIPT)), caller: ticket ?? "", endpoint: client.url };
    if (link === null) return { undone: 0, missed: 1 };
    return turns.turn(call.keys, async () => {
      const takenBack = /** @type {Set<number>} */ (call.takenBack);
      const left = call.requests.filter((_, r) => r !== index && !takenBack.has(r));
      const without = left.length > 0 ? decideOn(left, call.keys, call.basis, call.atMs).next : call.keys.map(() => "");
      /** @type {string[]} */
      const keys = [];
      /** @type {Array<string | number>} */
      const args = [call.atMs, Number.MAX_SAFE_INTEGER, link.caller, 0]; // a restore is not a decision: any time will do
      /** @type {string[]} */
      const values = [];
      for (let u = 0; u < call.keys.length; u++) {
        if (!call.wrote[u]) continue; // the call wrote nothing there
        const value = without[u] !== "" ? tagged(without[u], link.caller) : call.basis[u] === "" ? DELETE : call.basis[u];
        keys.push(call.keys[u]);
        values.push(value === DELETE ? "" : value);
        args.push(call.values[u], value, call.expiresAtMs[u]);
      }
      for (let attempt = 0; attempt < UNDO_ATTEMPTS; attempt++) {
        /** @type {unknown} */
        let reply;
        try {
          reply = await send(link, [...keys, ...keys.map(holdKeyOf)], args, undefined);
        } catch {
          break;
        }
        const [applied, , heldMs] = parseReply(reply, keys.length);
        if (applied) {
          takenBack.add(index);
          let w = 0;
          for (let u = 0; u < call.keys.length; u++) if (call.wrote[u]) call.values[u] = values[w++];
          keys.forEach((key, k) => remember(key, values[k]));
          counters.undone++;
          return { undone: 1, missed: 0 };
        }
        if (heldMs === 0) break; // another isolate wrote over the call's write: the charge stays
        await sleep(Math.min(heldMs, typicalRoundTripMs()));
      }
      counters.undoMissed++;
      return { undone: 0, missed: 1 };
    });
  }

  /**
   * A key's new value: the state bytes and a tag naming this write, unique to it (so that no later
   * write is ever mistaken for it: a take-back compares against it).
   * @param {string} state base64
   * @param {string} caller
   */
  function tagged(state, caller) {
    return `${state}.${caller.replaceAll("-", "").slice(0, 12)}${(++writes).toString(36)}`;
  }

  /**
   * Decides every request of `batch` in order, each all-or-nothing, on `basis` (each key's value) at
   * `atMs`, in the scratch core, which is left empty again. A request first gives back what it gives
   * back, and lends what it asks for once admitted (or, a refill, without deciding): the core's lend
   * and giveBack, on the same states, in the same call (leases over compare-and-set).
   * @param {readonly Asked[]} batch
   * @param {readonly string[]} keys
   * @param {readonly string[]} basis
   * @param {number} atMs
   * @returns {Decided}
   */
  function decideOn(batch, keys, basis, atMs) {
    const n = keys.length;
    // Every request of a batch has the same (rule, key) pairs: the first one's name the slots.
    const first = pairsOf(batch[0]);
    const firstIndices = rules.indicesOf(first);
    const core = rules.core;
    /** @type {Array<{ index: number, key: string, windowMs: number }>} */
    const slots = new Array(n);
    for (let i = 0; i < first.length; i++) {
      const u = keys.indexOf(stateKeyOf(first[i]));
      slots[u] ??= { index: firstIndices[i], key: first[i].key, windowMs: first[i].rule.windowMs };
    }
    const indices = slots.map((slot) => slot.index);
    const evictionsBefore = evictions(core, indices);
    // A lease ends here no later than in Redis's clock, whatever this isolate's offset estimate missed
    // (at most half a round trip): a round trip shorter.
    const marginMs = Math.ceil(typicalRoundTripMs());
    try {
      for (let u = 0; u < n; u++) {
        core.reset(slots[u].index, slots[u].key);
        if (basis[u] !== "") importOrForget(core, slots[u].index, slots[u].key, stateOf(basis[u]));
      }
      /** @type {Array<Outcome | Error>} */
      const results = [];
      for (const request of batch) {
        try {
          results.push(/** @type {Outcome} */ (decideOne(core, request, atMs, marginMs)));
        } catch (error) {
          results.push(error instanceof Error ? error : new Error(String(error)));
        }
      }
      if (evictions(core, indices) !== evictionsBefore) {
        throw new Error("redis store: a call's keys overflowed the scratch key table");
      }
      /** @type {string[]} */
      const next = new Array(n).fill("");
      /** @type {number[]} */
      const expiresAtMs = new Array(n).fill(0);
      for (let u = 0; u < n; u++) {
        // Back to full quota by the core's word (lent units included), and never sooner than two
        // windows (a sliding counter still weighs the previous window after the current one turns).
        const resetMs = core.peek(slots[u].index, slots[u].key, 1, atMs).resetMs;
        expiresAtMs[u] = atMs + Math.max(resetMs, 2 * slots[u].windowMs) + clockToleranceMs;
        const bytes = core.exportState(slots[u].index, slots[u].key);
        if (bytes === null) continue;
        const encoded = toBase64(bytes);
        if (encoded !== stateOf(basis[u])) next[u] = encoded; // unchanged (denials, peeks): nothing to write
      }
      return { results, next, expiresAtMs };
    } finally {
      for (let u = 0; u < n; u++) core.reset(slots[u].index, slots[u].key);
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
  function decideOne(core, request, atMs, marginMs) {
    const { checks } = request;
    const pairIndices = rules.indicesOf(pairsOf(request)); // the batch's rules: no new core
    /** @type {number[] | undefined} */
    let returned;
    if (request.giveBack !== undefined) {
      returned = request.giveBack.map((back, j) =>
        LENDING_ALGORITHMS.includes(back.rule.algorithm) ? core.giveBack(pairIndices[checks.length + j], back.key, back.units, back.expiresAtMs) : 0,
      );
    }
    const outcome = request.refill
      ? null
      : core.checkAll(checks.map((c, i) => ({ rule: pairIndices[i], key: c.key, cost: c.cost })), atMs, { peek: request.peek });
    /** @type {Array<object | null> | undefined} */
    let leases;
    if (request.lend !== undefined && !request.peek && (outcome === null || outcome.allowed)) {
      const { wanted, leaseMs } = request.lend;
      leases = checks.map((check, i) => {
        const units = wanted?.[i] ?? 0;
        const repeat = checks.findIndex((c) => c.rule.id === check.rule.id && c.key === check.key) !== i;
        if (!(units > 0) || repeat || !LENDING_ALGORITHMS.includes(check.rule.algorithm)) return null;
        const lease = core.lend(pairIndices[i], check.key, units, leaseMs, atMs);
        const validForMs = lease.expiresAtMs - atMs - marginMs;
        if (lease.units === 0 || validForMs <= 0) return null; // too short to use: the units lapse with it
        const endsWithWindow = WINDOW_LENDING_ALGORITHMS.includes(check.rule.algorithm) && lease.expiresAtMs < atMs + leaseMs;
        return { ...lease, validForMs, endsWithWindow };
      });
    }
    if (outcome === null) {
      const resetMs = checks.map((c, i) => core.peek(pairIndices[i], c.key, 1, atMs).resetMs);
      return { leases: leases ?? checks.map(() => null), returned: returned ?? null, resetMs };
    }
    return { ...outcome, ...(leases === undefined ? {} : { leases }), ...(returned === undefined ? {} : { returned }) };
  }

  /**
   * The (rule, key) pairs a request touches: its checks', then those it gives units back to.
   * @param {Asked} request
   * @returns {Array<{ rule: import("./store.js").NormalizedRule, key: string }>}
   */
  function pairsOf(request) {
    return request.giveBack === undefined ? [...request.checks] : [...request.checks, ...request.giveBack];
  }

  /**
   * The longest a batch may take: every attempt it is allowed, each given up after the call timeout.
   * @param {string} endpoint
   * @returns {number}
   */
  function batchBoundMs(endpoint) {
    return (maxAttempts + 2) * (timeoutMs ?? roundTrips.timeoutMs(endpoint));
  }

  /** @returns {number} about one round trip to Redis, as measured so far (1 before any answer) */
  function typicalRoundTripMs() {
    const { srttMs } = roundTrips.summary;
    return Number.isFinite(srttMs) ? Math.max(1, srttMs) : 1;
  }

  /** @returns {number} this isolate's clock, checked */
  function localTime() {
    const now = clock();
    if (typeof now !== "number" || !Number.isFinite(now)) throw new TypeError(`redis store: clock() returned ${String(now)}`);
    return now;
  }

  /**
   * A key's state lives at `<prefix>s:<rule id>:<key>` and its hold at `<prefix>h:<rule id>:<key>`: the
   * letter after the prefix keeps the two apart whatever a client puts in its key.
   * @param {{ rule: import("./store.js").NormalizedRule, key: string }} check
   * @returns {string}
   */
  function stateKeyOf(check) {
    return `${prefix}s:${check.rule.id}:${check.key}`;
  }

  /** @param {string} stateKey @returns {string} */
  function holdKeyOf(stateKey) {
    return `${prefix}h:${stateKey.slice(prefix.length + 2)}`;
  }

  /**
   * The Redis keys of a request's checks, each once, sorted (a batch's identity).
   * @param {ReadonlyArray<{ rule: import("./store.js").NormalizedRule, key: string }>} checks
   * @returns {string[]}
   */
  function redisKeysOf(checks) {
    return [...new Set(checks.map(stateKeyOf))].sort();
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
   * @param {string} key
   * @param {string} value
   */
  function remember(key, value) {
    cache.delete(key);
    cache.set(key, value);
    if (cache.size > maxCachedKeys) {
      const oldest = cache.keys().next();
      if (!oldest.done) cache.delete(oldest.value);
    }
  }

  /**
   * reset forgets the keys of `checks` (back to their full quota) in Redis, in one round trip, after
   * this isolate's calls on them. An isolate that still remembers an older state finds the key gone at
   * its next call and decides again.
   * @param {readonly StoreCheck[]} checks
   * @param {StoreOptions} [resetOptions]
   * @returns {Promise<void>}
   */
  async function reset(checks, resetOptions = {}) {
    const { url: endpoint, rest } = clientFor(resetOptions.env);
    const keys = redisKeysOf(checks);
    await turns.turn(keys, async () => {
      const limitMs = timeoutMs ?? roundTrips.timeoutMs(endpoint);
      await withDeadline(rest.send(["DEL", ...keys]), limitMs, "redis");
      for (const key of keys) cache.delete(key);
    });
  }

  return {
    name: "redis",
    ownDeadline: true,
    /** The store bounds each of its calls itself, from its send: a chain around it waits as long as it does. */
    timeoutFor: () => Infinity,
    takeBack,
    counters,
    get roundTrip() {
      return roundTrips.summary;
    },
    decide,
    refill,
    objectOf,
    reset,
    /** The scratch core is emptied after every decision: nothing counts in the isolate. */
    isolateTables: () => [],
    /** @param {unknown} env */
    isBound: (env) => (url !== undefined || present(env, urlEnv)) && (token !== undefined || present(env, tokenEnv)),
  };
}

/**
 * The state bytes (base64) of a key's value: the value without its write's tag.
 * @param {string} value
 * @returns {string}
 */
function stateOf(value) {
  const dot = value.indexOf(".");
  return dot < 0 ? value : value.slice(0, dot);
}

/**
 * @param {unknown} reply the script's reply
 * @param {number} keyCount
 * @returns {[applied: boolean, redisNowMs: number, heldMs: number]}
 */
function parseReply(reply, keyCount) {
  const valid = Array.isArray(reply) && (reply[0] === 1 || reply[0] === 0) && Number.isFinite(Number(reply[1]));
  if (!valid || (reply[0] === 0 && (reply.length !== keyCount + 3 || !(Number(reply[2]) >= 0)))) {
    throw new Error("redis store: the script's reply is malformed");
  }
  return [reply[0] === 1, Number(reply[1]), reply[0] === 1 ? 0 : Number(reply[2])];
}

/** @param {number} ms @returns {Promise<void>} */
function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
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

/** @param {Uint8Array} bytes */
function toBase64(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
  return btoa(binary);
}

/** @param {string} text */
function fromBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * @param {unknown} env
 * @param {string} name
 */
function present(env, name) {
  const value = envValue(env, name);
  return typeof value === "string" && value !== "";
}

/**
 * @param {unknown} env
 * @param {string} name
 * @returns {string}
 */
function fromEnv(env, name) {
  const value = envValue(env, name);
  if (value === undefined || value === null || value === "") {
    throw new SluiceConfigError(`env.${name}`, "is not set (the Redis store reads its REST URL and token from env; add it with wrangler secret put)");
  }
  return /** @type {string} */ (value);
}

/**
 * @param {unknown} env
 * @param {string} name
 * @returns {unknown}
 */
function envValue(env, name) {
  return env !== null && typeof env === "object" ? /** @type {Record<string, unknown>} */ (env)[name] : undefined;
}

/**
 * @param {unknown} value
 * @param {string} field
 */
function checkUrl(value, field) {
  /** @type {URL | null} */
  let parsed = null;
  if (typeof value === "string") {
    try {
      parsed = new URL(value);
    } catch {
      parsed = null;
    }
  }
  if (parsed === null || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
    throw new SluiceConfigError(field, `must be the database's REST URL (https://...); got ${describe(value)}`);
  }
}

/**
 * The token's value is never shown, not even in part.
 * @param {unknown} value
 * @param {string} field
 */
function checkToken(value, field) {
  if (typeof value !== "string" || value === "" || /[\s]/.test(value)) {
    throw new SluiceConfigError(field, `must be the database's REST token (a non-empty string without spaces); got ${typeof value === "string" ? "an invalid string" : describe(value)}`);
  }
}

/**
 * @param {unknown} value
 * @param {string} field
 */
function checkName(value, field) {
  if (typeof value !== "string" || value === "") throw new SluiceConfigError(field, `must name an env variable; got ${describe(value)}`);
}

/**
 * @param {unknown} value
 * @param {string} field
 */
function checkWhole(value, field) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new SluiceConfigError(field, `must be a whole number >= 1; got ${describe(value)}`);
  }
}

/**
 * What a waiting request asked, without how to answer it (kept for a take-back's recomputation).
 * @param {Asked} request
 * @returns {Asked}
 */
function asAsked({ checks, peek, lend, giveBack, refill }) {
  return { checks, peek, ...(lend === undefined ? {} : { lend }), ...(giveBack === undefined ? {} : { giveBack }), ...(refill === undefined ? {} : { refill }) };
}
