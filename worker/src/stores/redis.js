// The Redis store: exact counting in Redis (Upstash, or any Redis behind the Upstash REST protocol),
// with the core's own arithmetic.
//
// Redis holds each (rule, key)'s state bytes, as the core exports them (base64 text, since the REST
// protocol is JSON). The isolate decides; Redis only arbitrates:
//  1. the isolate takes the last state it saw of each key (a bounded cache; "absent" for a key it has
//     not seen), imports it into a scratch core, decides all checks at once (all-or-nothing) at its
//     estimate of Redis's clock, and exports the new states;
//  2. one script call (redis-cas-script.js, EVALSHA) sets the new states only if every key still
//     holds the state decided on and the decision time is within `clockToleranceMs` of Redis's TIME;
//  3. otherwise the script returns the current states and TIME, and the isolate decides again on them,
//     at that time. An isolate that lost twice in one decision reserves the keys for its next call,
//     so that isolates nearer to Redis cannot starve it (redis-cas-script.js, "Fairness").
// So a warm key costs one round trip, a conflict (another isolate wrote since) one more, and the stored
// history of every key is a serial sequence of the core's own transitions: no isolate ever decides on a
// state that was not the latest. Denials and peeks are checked the same way (they write nothing).
//
// Time: each isolate keeps the offset between Redis's TIME and its own clock, learnt from every reply
// (against the middle of the round trip, as NTP does), and decides at its clock plus that offset; a
// decision further than `clockToleranceMs` from TIME is refused (and decided again with the offset the
// refusal taught), so isolates whose clocks disagree still decide at (nearly) the same instants. The
// store reads its clock when it decides (after waiting for its turn on the key), not when the request
// arrived, so the offset and the decision time are both as fresh as they can be. Keys expire (PXAT) once the core says
// they are back to full quota, and never sooner than two windows after the decision, so idle keys leave
// Redis by themselves.
//
// Requests of one isolate on the same key wait for each other (one script call in flight per key per
// isolate), so a hot key does not make an isolate race itself.
import { nowMs as wallClockMs } from "../engine/clock.js";
import { SluiceConfigError, describe } from "../engine/errors.js";
import { checkTimeout } from "./deadline.js";
import { REDIS_CAS_SCRIPT } from "./redis-cas-script.js";
import { RuleCore } from "./rule-core.js";
import { createUpstashRestClient, sha1Hex } from "./upstash-rest.js";
import { MAX_CHECKS_PER_CALL, SluiceError, Status } from "../../../wasm-bindings/sluice.js";

/** @import { IsolateTable, Outcome, StoreCheck, StoreOptions } from "./store.js" */
/** @import { UpstashRestClient } from "./upstash-rest.js" */
/** @import { SluiceCore } from "../../../wasm-bindings/sluice.js" */
/**
 * The Redis keys of one call: each state key once, its hold key, and the first check on it.
 * @typedef {{ unique: string[], holds: string[], firstCheckOfUnique: number[] }} CallKeys
 */

/** The env variables the REST URL and token are read from, by default (Upstash's own names). */
export const DEFAULT_REDIS_ENV = Object.freeze({ url: "UPSTASH_REDIS_REST_URL", token: "UPSTASH_REDIS_REST_TOKEN" });

// The scratch core holds one call's keys (at most 16) and is emptied after every decision.
const SCRATCH_KEYS_PER_RULE = 64;

/**
 * @typedef {object} RedisStoreCounters
 * @property {number} decisions Decisions taken (each one or more script calls).
 * @property {number} roundTrips HTTP requests sent to the REST endpoint.
 * @property {number} conflicts Script calls refused because another isolate had written a key since this one last saw it.
 * @property {number} clockRefusals Script calls refused because the decision time was too far from Redis's TIME.
 * @property {number} held Script calls refused because another isolate held a key (it had lost twice); answered after a wait.
 * @property {number} exhausted Decisions that gave up after maxAttempts refused script calls.
 */
/**
 * The exact store over Redis (Upstash REST protocol). Decisions are taken at Redis's time; decide and
 * reset need options.env when the URL or token come from env.
 * @typedef {{
 *   readonly name: "redis";
 *   readonly counters: Readonly<RedisStoreCounters>;
 *   decide(checks: readonly StoreCheck[], options?: StoreOptions): Promise<Outcome>;
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
 * @property {number} [maxAttempts] Refused script calls per decision before giving up (the chain then falls back). Default 16.
 * @property {number} [reserveMs] How long an isolate that lost twice holds the keys for its next call. Default 1000.
 * @property {number} [maxCachedKeys] How many keys' last states the isolate remembers. Default 10000.
 * @property {number} [timeoutMs] Abort the decision (and its HTTP request) after this long. Default Infinity.
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
    timeoutMs = Infinity,
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
  checkTimeout(timeoutMs, "timeoutMs");
  if (fetchFn !== undefined && typeof fetchFn !== "function") throw new SluiceConfigError("fetch", `must be a function; got ${describe(fetchFn)}`);
  if (typeof clock !== "function") throw new SluiceConfigError("clock", `must be a function returning ms since the epoch; got ${describe(clock)}`);

  const rules = new RuleCore((rule) => ({
    algorithm: rule.algorithm,
    limit: rule.limit,
    windowMs: rule.windowMs,
    burst: rule.burst,
    keyCapacity: SCRATCH_KEYS_PER_RULE,
  }));
  /** @type {RedisStoreCounters} */
  const counters = {
    /** Decisions taken (each is one or more script calls). */
    decisions: 0,
    /** HTTP requests sent to the REST endpoint. */
    roundTrips: 0,
    /** Script calls refused because another isolate had written the key since this one last saw it. */
    conflicts: 0,
    /** Script calls refused because the decision time was too far from Redis's TIME. */
    clockRefusals: 0,
    /** Script calls refused because another isolate held a key (it had lost twice); answered after a wait. */
    held: 0,
    /** Decisions that gave up after maxAttempts refused script calls. */
    exhausted: 0,
  };
  /** @type {Map<string, string>} Redis key -> the last state seen ("" for absent), least recently used first */
  const cache = new Map();
  /** @type {Map<string, Promise<void>>} Redis key -> the tail of the queue of this isolate's decisions on it */
  const locks = new Map();
  /** @type {{ url: string, token: string, rest: UpstashRestClient } | null} */
  let client = null;
  /** @type {Promise<string> | null} */
  let shaPromise = null;
  /** @type {number | null} Redis's TIME minus this isolate's clock, as last measured */
  let offsetMs = null;
  let roundTripMs = 1; // the last script call's round trip, as this isolate's clock measured it
  /** @type {string | null} names this store's holds (made at first use: no randomness at global scope) */
  let ticket = null;

  /**
   * The client for the URL and token in effect: built at first use, and again if env's values change.
   * @param {unknown} env
   * @returns {UpstashRestClient}
   */
  function clientFor(env) {
    const resolvedUrl = url ?? fromEnv(env, urlEnv);
    const resolvedToken = token ?? fromEnv(env, tokenEnv);
    if (client !== null && client.url === resolvedUrl && client.token === resolvedToken) return client.rest;
    if (url === undefined) checkUrl(resolvedUrl, `env.${urlEnv}`);
    if (token === undefined) checkToken(resolvedToken, `env.${tokenEnv}`);
    const rest = createUpstashRestClient({
      url: resolvedUrl,
      token: resolvedToken,
      fetch: fetchFn ?? ((...args) => globalThis.fetch(...args)),
      onRoundTrip: () => counters.roundTrips++,
    });
    client = { url: resolvedUrl, token: resolvedToken, rest };
    return rest;
  }

  /**
   * decide checks every (rule, key, cost) of one request, all-or-nothing, at Redis's time.
   * @param {readonly StoreCheck[]} checks
   * @param {StoreOptions} [decideOptions]
   * @returns {Promise<Outcome>}
   */
  async function decide(checks, decideOptions = {}) {
    const { peek = false, env } = decideOptions;
    if (!Array.isArray(checks) || checks.length < 1 || checks.length > MAX_CHECKS_PER_CALL) {
      throw new RangeError(`checks must be an array of 1 to ${MAX_CHECKS_PER_CALL} checks`);
    }
    const rest = clientFor(env); // config errors throw here, before any request
    const sha = await (shaPromise ??= sha1Hex(REDIS_CAS_SCRIPT));
    const caller = (ticket ??= crypto.randomUUID());
    const keys = redisKeysOf(checks);
    const signal = timeoutMs === Infinity ? undefined : AbortSignal.timeout(timeoutMs);
    const release = await lock(keys.unique);
    try {
      signal?.throwIfAborted();
      return await decideLocked(rest, sha, caller, checks, keys, peek, signal);
    } finally {
      release();
    }
  }

  /**
   * @param {UpstashRestClient} rest
   * @param {string} sha
   * @param {string} caller this store's ticket
   * @param {readonly StoreCheck[]} checks
   * @param {CallKeys} keys
   * @param {boolean} peek
   * @param {AbortSignal | undefined} signal
   * @returns {Promise<Outcome>}
   */
  async function decideLocked(rest, sha, caller, checks, keys, peek, signal) {
    let states = keys.unique.map((key) => cache.get(key) ?? "");
    const n = keys.unique.length;
    const scriptKeys = [...keys.unique, ...keys.holds];
    let refused = 0;
    // Calls refused because another isolate held a key do not count as attempts (the holder is about
    // to succeed), but are bounded too: a holder that died releases its hold after reserveMs.
    for (let calls = 0; refused < maxAttempts && calls < 4 * maxAttempts; calls++) {
      const sentAtMs = localTime();
      const atMs = Math.round(sentAtMs + (offsetMs ?? 0));
      const { outcome, next, expiresAtMs } = decideOn(checks, keys, states, atMs, peek);
      /** @type {Array<string | number>} */
      const args = [atMs, clockToleranceMs, caller, refused >= 2 ? reserveMs : 0];
      for (let u = 0; u < n; u++) args.push(states[u], next[u], expiresAtMs[u]);
      const reply = await rest.evalScript(REDIS_CAS_SCRIPT, sha, scriptKeys, args, signal);
      const [applied, redisNowMs, heldMs] = parseReply(reply, n);
      const receivedAtMs = localTime();
      offsetMs = redisNowMs - (sentAtMs + receivedAtMs) / 2;
      roundTripMs = Math.max(1, receivedAtMs - sentAtMs);
      if (applied) {
        for (let u = 0; u < keys.unique.length; u++) remember(keys.unique[u], next[u] === "" ? states[u] : next[u]);
        counters.decisions++;
        return /** @type {Outcome} */ ({ ...outcome, store: "redis" });
      }
      const current = /** @type {unknown[]} */ (reply).slice(3).map(String);
      for (let u = 0; u < n; u++) remember(keys.unique[u], current[u]);
      if (heldMs > 0) {
        counters.held++;
        states = current;
        // The holder needs about one round trip; never wait past its hold.
        await sleep(Math.min(heldMs, roundTripMs), signal);
        continue;
      }
      refused++;
      if (current.some((state, u) => state !== states[u])) counters.conflicts++;
      if (Math.abs(atMs - redisNowMs) > clockToleranceMs) counters.clockRefusals++;
      states = current;
      signal?.throwIfAborted();
    }
    counters.exhausted++;
    throw new Error(`redis store: ${maxAttempts} script calls in a row were refused (contention); not decided`);
  }

  /**
   * Decides every check on `states` at `atMs` in the scratch core, which is left empty again.
   * Returns the outcome, each unique key's new state ("" when nothing is to be written) and when it expires.
   * @param {readonly StoreCheck[]} checks
   * @param {CallKeys} keys
   * @param {string[]} states
   * @param {number} atMs
   * @param {boolean} peek
   */
  function decideOn(checks, keys, states, atMs, peek) {
    const indices = rules.indicesOf(checks);
    const core = rules.core;
    const count = checks.length;
    const unique = keys.unique.length;
    const firstCheck = keys.firstCheckOfUnique;
    const evictionsBefore = evictions(core, indices);
    try {
      for (let u = 0; u < unique; u++) {
        const i = firstCheck[u];
        core.reset(indices[i], checks[i].key);
        if (states[u] !== "") importOrForget(core, indices[i], checks[i].key, states[u]);
      }
      const coreChecks = new Array(count);
      for (let i = 0; i < count; i++) coreChecks[i] = { rule: indices[i], key: checks[i].key, cost: checks[i].cost };
      const outcome = core.checkAll(coreChecks, atMs, { peek });
      if (evictions(core, indices) !== evictionsBefore) {
        throw new Error("redis store: a call's keys overflowed the scratch key table");
      }
      /** @type {string[]} */
      const next = new Array(unique).fill("");
      /** @type {number[]} */
      const expiresAtMs = new Array(unique).fill(0);
      if (outcome.allowed && !peek) {
        for (let u = 0; u < unique; u++) {
          const i = firstCheck[u];
          const bytes = core.exportState(indices[i], checks[i].key);
          if (bytes === null) continue;
          next[u] = toBase64(bytes);
          // Back to full quota by the core's word, and never sooner than two windows (a sliding
          // counter still weighs the previous window after the current one turns).
          const rule = checks[i].rule;
          expiresAtMs[u] = atMs + Math.max(outcome.checks[i].resetMs, 2 * rule.windowMs) + clockToleranceMs;
        }
      }
      return { outcome, next, expiresAtMs };
    } finally {
      for (let u = 0; u < unique; u++) {
        const i = firstCheck[u];
        core.reset(indices[i], checks[i].key);
      }
    }
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
   * @param {readonly StoreCheck[]} checks
   * @returns {CallKeys}
   */
  function redisKeysOf(checks) {
    /** @type {string[]} */
    const unique = [];
    /** @type {string[]} */
    const holds = [];
    /** @type {number[]} */
    const firstCheckOfUnique = [];
    for (let i = 0; i < checks.length; i++) {
      const name = `${checks[i].rule.id}:${checks[i].key}`;
      if (!unique.includes(`${prefix}s:${name}`)) {
        unique.push(`${prefix}s:${name}`);
        holds.push(`${prefix}h:${name}`);
        firstCheckOfUnique.push(i);
      }
    }
    return { unique, holds, firstCheckOfUnique };
  }

  /**
   * @param {string} key
   * @param {string} state
   */
  function remember(key, state) {
    cache.delete(key);
    cache.set(key, state);
    if (cache.size > maxCachedKeys) {
      const oldest = cache.keys().next();
      if (!oldest.done) cache.delete(oldest.value);
    }
  }

  /**
   * Waits for this isolate's earlier decisions on any of `keys`; returns the function that lets the
   * next one go. Keys are taken in sorted order, so two multi-key decisions cannot wait on each other.
   * @param {readonly string[]} keys
   * @returns {Promise<() => void>}
   */
  async function lock(keys) {
    const sorted = [...keys].sort();
    /** @type {Array<() => void>} */
    const releases = [];
    for (const key of sorted) {
      const previous = locks.get(key);
      /** @type {() => void} */
      let release = () => {};
      /** @type {Promise<void>} */
      const mine = new Promise((resolve) => (release = resolve));
      locks.set(key, mine);
      releases.push(() => {
        if (locks.get(key) === mine) locks.delete(key);
        release();
      });
      if (previous !== undefined) await previous;
    }
    return () => {
      for (const release of releases) release();
    };
  }

  /**
   * reset forgets the keys of `checks` (back to their full quota) in Redis, in one round trip. An
   * isolate that still remembers an older state finds the key gone at its next call and decides again.
   * @param {readonly StoreCheck[]} checks
   * @param {StoreOptions} [resetOptions]
   * @returns {Promise<void>}
   */
  async function reset(checks, resetOptions = {}) {
    const rest = clientFor(resetOptions.env);
    const { unique } = redisKeysOf(checks);
    const signal = timeoutMs === Infinity ? undefined : AbortSignal.timeout(timeoutMs);
    const release = await lock(unique);
    try {
      await rest.send(["DEL", ...unique], signal);
      for (const key of unique) cache.delete(key);
    } finally {
      release();
    }
  }

  return {
    name: "redis",
    counters,
    decide,
    reset,
    /** The scratch core is emptied after every decision: nothing counts in the isolate. */
    isolateTables: () => [],
    /** @param {unknown} env */
    isBound: (env) => (url !== undefined || present(env, urlEnv)) && (token !== undefined || present(env, tokenEnv)),
  };
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

/**
 * @param {number} ms
 * @param {AbortSignal | undefined} signal
 * @returns {Promise<void>}
 */
function sleep(ms, signal) {
  signal?.throwIfAborted();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
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
