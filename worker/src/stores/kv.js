// The KV store: a global count that is approximate, for when a Durable Object is not wanted or not up.
//
// Each (rule, key) is counted in fixed windows; window n's count lives in the KV key
// `<prefix><n>:<rule id>:<key>`, expiring two windows later (never less than KV's 60 s minimum). The
// value is the core's own fixed-window state bytes, so no window arithmetic is redone here.
//
// KV allows about one write per key per second and is eventually consistent (reads may be served from
// a cache up to a minute old), so each isolate keeps a view of every bucket it uses:
//  - reads: a bucket is read from KV at most once per `readIntervalMs`; between reads the isolate
//    decides from its view: the KV count plus what it admitted itself since;
//  - writes: what the isolate admits accumulates and is flushed (read KV, add, write) at most once per
//    `flushIntervalMs` per bucket, through ctx.waitUntil, never holding up a response.
// Isolates therefore over-admit: within one read interval, each isolate can admit up to the whole
// limit on its own, and two isolates flushing at once can lose one another's addition. README.md, "Stores"
// has the measured figures.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { checkBinding, isBound, resolveBinding } from "./binding.js";
import { sameBytes } from "./bytes.js";
import { RuleCore } from "./rule-core.js";
import { DEFAULT_LOG_INTERVAL_MS, checkLogOptions, createThrottledLog } from "./throttled-log.js";
import { SluiceError, Status } from "../../../wasm-bindings/sluice.js";

// KV refuses keys longer than 512 bytes and expirations sooner than 60 s.
const KV_MAX_KEY_BYTES = 512;
const KV_MIN_TTL_SECONDS = 60;

/** @import { IsolateTable, NormalizedRule, Outcome, StoreCheck, TimedStoreOptions } from "./store.js" */

/**
 * @typedef {object} KvStoreOptions
 * @property {KVNamespace | string} binding The KV namespace, or its binding name in env.
 * @property {string} [prefix] Prepended to every KV key. Default "sluice:".
 * @property {number} [readIntervalMs] How stale an isolate's view of a bucket may get before it reads KV again. Default 1000.
 * @property {number} [flushIntervalMs] The least time between two writes of one bucket by one isolate. Default 1000.
 * @property {number} [maxBuckets] How many buckets an isolate remembers; idle ones are dropped beyond it. Default 10000.
 * @property {(line: string) => void} [log] Where failed flushes are reported. Default console.warn.
 * @property {number} [logIntervalMs] Failed flushes are logged at most once per interval. Default 60000.
 */
/**
 * @typedef {object} KvStoreCounters
 * @property {number} reads
 * @property {number} writes
 * @property {number} readFailures
 * @property {number} writeFailures
 * @property {number} unreadableValues KV values the core refused (another format or rule): counted from zero instead.
 */
/**
 * The approximate global store over Workers KV. decide needs options.nowMs; pass options.ctx so that
 * flushes outlive the response. settle() resolves when every flush already running has finished.
 * isolateTables(rule) is the view table it keeps in the isolate (fixed-window, keyCapacity + 1 keys).
 * @typedef {{
 *   readonly name: "kv";
 *   readonly counters: Readonly<KvStoreCounters>;
 *   decide(checks: readonly StoreCheck[], options: TimedStoreOptions): Outcome | Promise<Outcome>;
 *   reset(checks: readonly StoreCheck[], options: TimedStoreOptions): Promise<void>;
 *   settle(): Promise<void>;
 *   isolateTables(rule: NormalizedRule): IsolateTable[];
 *   isBound(env: unknown): boolean;
 * }} KvStore
 */

// Names each store's view instance for the isolate's memory budget.
let kvStoresCreated = 0;

// The scratch key the flushes add up in: 0xff never occurs in UTF-8, so no string key can be it.
const SCRATCH_KEY = Uint8Array.of(0xff);

/**
 * The state of one KV store: its settings, the isolate's views (one RuleCore table per rule, plus the
 * scratch key), the buckets it has seen, the flushes running, its log and its counters. The steps below
 * take it as their first argument.
 * @typedef {object} KvState
 * @property {KVNamespace | string} binding
 * @property {string} prefix
 * @property {number} readIntervalMs
 * @property {number} flushIntervalMs
 * @property {number} maxBuckets
 * @property {(rule: NormalizedRule) => import("../../../wasm-bindings/sluice.js").RuleSpec} viewSpec
 * @property {RuleCore} rules
 * @property {string} owner
 * @property {Map<string, Bucket>} buckets
 * @property {Set<Promise<void>>} flushes
 * @property {(atMs: number, line: string) => void} report
 * @property {KvStoreCounters} counters
 */
/**
 * One (window, rule, key) as this isolate sees it.
 * @typedef {object} Bucket
 * @property {NormalizedRule} rule
 * @property {string | Uint8Array} key
 * @property {number} window
 * @property {string | null} name Its KV key, once known.
 * @property {Promise<string> | null} naming The hash naming a key too long for KV, while it runs.
 * @property {number} readAtMs
 * @property {number} generation
 * @property {number} pending Admitted here, not yet sent to KV.
 * @property {number} unconfirmed Sent to KV by a flush still running.
 * @property {number} lastChargeMs
 * @property {boolean} flushing
 * @property {number} flushedAtMs
 * @property {ReturnType<typeof setTimeout> | null} timer
 */

/**
 * createKvStore returns a store counting in a KV namespace.
 *
 * - binding: the KV namespace, or its name in `env` (passed to decide as options.env).
 * - prefix: prepended to every KV key. Default "sluice:".
 * - readIntervalMs: how stale an isolate's view of a bucket may get before it reads KV again. Default 1000.
 * - flushIntervalMs: the least time between two writes of one bucket by one isolate. Default 1000.
 * - maxBuckets: how many buckets an isolate remembers; idle ones are dropped beyond it. Default 10000.
 * - log, logIntervalMs: where failed flushes are reported, at most once per interval. Default console.warn, 60 s.
 *
 * Every rule is counted as a fixed window of its `limit` per `windowMs` (a bucket rule's burst is not
 * modelled). decide needs options.nowMs; pass options.ctx so that flushes outlive the response.
 * @param {KvStoreOptions} options
 * @returns {KvStore}
 */
export function createKvStore(options = /** @type {any} */ ({})) {
  const state = kvState(options);
  return {
    name: "kv",
    counters: state.counters,
    decide: (checks, decideOptions) => decide(state, checks, decideOptions),
    reset: (checks, resetOptions) => reset(state, checks, resetOptions),
    settle: () => settle(state),
    isolateTables: (rule) => isolateTables(state, rule),
    isBound: (/** @type {unknown} */ env) => isBound(state.binding, env),
  };
}

/** The store's state from its options, validated (a SluiceConfigError names the field). */
/** @param {KvStoreOptions} options @returns {KvState} */
function kvState(options) {
  const {
    binding,
    prefix = "sluice:",
    readIntervalMs = 1000,
    flushIntervalMs = 1000,
    maxBuckets = 10_000,
    log = console.warn,
    logIntervalMs = DEFAULT_LOG_INTERVAL_MS,
  } = options;
  checkBinding(binding, "binding", ["get", "put"]);
  if (typeof prefix !== "string") throw new SluiceConfigError("prefix", `must be a string; got ${describe(prefix)}`);
  checkNonNegative(readIntervalMs, "readIntervalMs");
  checkNonNegative(flushIntervalMs, "flushIntervalMs");
  if (!Number.isInteger(maxBuckets) || maxBuckets < 1) {
    throw new SluiceConfigError("maxBuckets", `must be a whole number >= 1; got ${describe(maxBuckets)}`);
  }
  checkLogOptions(log, logIntervalMs);
  // One table per rule holds the isolate's views (plus the scratch key), in an instance of this store's own.
  return {
    binding,
    prefix,
    readIntervalMs,
    flushIntervalMs,
    maxBuckets,
    viewSpec,
    rules: new RuleCore(viewSpec),
    owner: `kv#${++kvStoresCreated}`,
    buckets: new Map(),
    flushes: new Set(),
    report: createThrottledLog(log, logIntervalMs),
    counters: { reads: 0, writes: 0, readFailures: 0, writeFailures: 0, unreadableValues: 0 },
  };
}

// A rule's view table: a fixed window of its limit, one key more for the scratch key.
/** @param {NormalizedRule} rule @returns {import("../../../wasm-bindings/sluice.js").RuleSpec} */
function viewSpec(rule) {
  // KV's counts are admitted requests: counting denied ones too would need a write per denial.
  if (rule.countDenied === true) {
    throw new SluiceConfigError("countDenied", "applies to the memory and durable stores; KV counts admitted requests only");
  }
  // KV keeps fixed-window counts, not the core's state bytes: it has nowhere to keep a block. A limiter
  // whose primary store is KV refuses blocking rules (options.js); as the fallback of a durable or redis
  // store, during their outage, KV throttles a blocking rule (the view below has no blockMs).
  return { algorithm: "fixed-window", limit: rule.limit, windowMs: rule.windowMs, keyCapacity: rule.keyCapacity + 1 };
}

/** @param {number | undefined} nowMs */
function checkNow(nowMs) {
  if (typeof nowMs !== "number" || !Number.isFinite(nowMs)) {
    throw new TypeError("the KV store needs options.nowMs (ms since the epoch)");
  }
}

// Decides from the views, reading KV first for the buckets whose view is older than readIntervalMs.
/** @param {KvState} state @param {readonly StoreCheck[]} checks @param {TimedStoreOptions} decideOptions */
function decide(state, checks, decideOptions = /** @type {any} */ ({})) {
  const { nowMs, peek = false, env, ctx } = decideOptions;
  checkNow(nowMs);
  const kv = resolveBinding(state.binding, env, "KV store binding");
  state.rules.indicesOf(checks);
  /** @type {Bucket[]} */
  const inUse = new Array(checks.length);
  /** @type {Bucket[] | null} */
  let stale = null;
  for (let i = 0; i < checks.length; i++) {
    const bucket = bucketOf(state, checks[i], nowMs);
    inUse[i] = bucket;
    const fresh = bucket.generation === state.rules.generation && nowMs >= bucket.readAtMs && nowMs - bucket.readAtMs < state.readIntervalMs;
    if (!fresh && (stale === null || !stale.includes(bucket))) (stale ??= []).push(bucket);
  }
  if (stale === null) return decideFromViews(state, checks, inUse, nowMs, peek, kv, ctx);
  return refresh(state, kv, stale, nowMs).then(() => decideFromViews(state, checks, inUse, nowMs, peek, kv, ctx));
}

// The core's decision on the views; an admission is charged to each bucket and flushed later.
/**
 * @param {KvState} state @param {readonly StoreCheck[]} checks @param {Bucket[]} inUse @param {number} nowMs
 * @param {boolean} peek @param {KVNamespace} kv @param {any} ctx
 */
function decideFromViews(state, checks, inUse, nowMs, peek, kv, ctx) {
  const indices = state.rules.indicesOf(checks);
  const viewChecks = checks.map((c, i) => ({ rule: indices[i], key: c.key, cost: c.cost }));
  const outcome = /** @type {Outcome} */ (/** @type {unknown} */ (state.rules.core.checkAll(viewChecks, nowMs, { peek })));
  outcome.store = "kv";
  if (outcome.allowed && !peek) {
    for (let i = 0; i < checks.length; i++) {
      const bucket = inUse[i];
      bucket.pending += checks[i].cost;
      bucket.lastChargeMs = nowMs;
      afterCharge(state, bucket, nowMs, kv, ctx);
    }
  }
  return outcome;
}

// Reads the stale buckets from KV: each view becomes what KV holds plus this isolate's admissions.
/** @param {KvState} state @param {KVNamespace} kv @param {Bucket[]} stale @param {number} nowMs */
async function refresh(state, kv, stale, nowMs) {
  let values;
  try {
    values = await Promise.all(stale.map(async (bucket) => kv.get(await nameOf(state, bucket), "arrayBuffer")));
  } catch (error) {
    state.counters.readFailures++;
    throw error;
  }
  state.counters.reads += stale.length;
  for (let i = 0; i < stale.length; i++) {
    const bucket = stale[i];
    // The view: what KV holds, plus this isolate's admissions that KV may not hold yet.
    loadView(state, bucket.rule, bucket.key, values[i], bucket.pending + bucket.unconfirmed, nowMs);
    bucket.readAtMs = nowMs;
    bucket.generation = state.rules.generation;
  }
}

// Sets `key`'s state in the core to `value` (KV bytes, or null) plus `units` more, clamped at the limit.
/**
 * @param {KvState} state @param {NormalizedRule} rule @param {string | Uint8Array} key
 * @param {ArrayBuffer | null | undefined} value @param {number} units @param {number} atMs
 */
function loadView(state, rule, key, value, units, atMs) {
  const core = state.rules.core;
  const index = state.rules.indicesOf([/** @type {any} */ ({ rule })])[0];
  core.reset(index, key);
  if (value !== null && value !== undefined) {
    try {
      core.importState(index, key, new Uint8Array(value));
    } catch (error) {
      if (!(error instanceof SluiceError && error.status === Status.INVALID_STATE)) throw error;
      state.counters.unreadableValues++; // another rule or format wrote it: count this window from zero
    }
  }
  if (units > 0) {
    // The core adds; a sum beyond the limit is a full window, which is all the core can hold.
    const added = core.check(index, key, units, atMs);
    if (!added.allowed && added.remaining > 0) core.check(index, key, added.remaining, atMs);
  }
  return index;
}

// After a charge: flush now if the bucket's slot is open, else once, when it opens.
/** @param {KvState} state @param {Bucket} bucket @param {number} nowMs @param {KVNamespace} kv @param {any} ctx */
function afterCharge(state, bucket, nowMs, kv, ctx) {
  if (bucket.flushing) return; // the running flush picks up what accumulated when it is done
  if (nowMs - bucket.flushedAtMs >= state.flushIntervalMs) {
    track(flush(state, bucket, nowMs, kv), ctx);
  } else if (bucket.timer === null) {
    const dueMs = bucket.flushedAtMs + state.flushIntervalMs;
    track(flushLater(state, bucket, dueMs, dueMs - nowMs, kv), ctx);
  }
}

/** @param {KvState} state @param {Bucket} bucket @param {number} dueMs @param {number} delayMs @param {KVNamespace} kv */
function flushLater(state, bucket, dueMs, delayMs, kv) {
  return new Promise((resolve) => {
    bucket.timer = setTimeout(resolve, delayMs);
  }).then(() => {
    bucket.timer = null;
    // A request may have flushed in this slot already.
    if (bucket.flushedAtMs < dueMs) return flush(state, bucket, dueMs, kv);
    return undefined;
  });
}

// Adds the bucket's pending units to KV (read, add in the core, write); on failure they wait for the next flush.
/** @param {KvState} state @param {Bucket} bucket @param {number} atMs @param {KVNamespace} kv @returns {Promise<void>} */
async function flush(state, bucket, atMs, kv) {
  if (bucket.flushing || bucket.pending === 0) return;
  const units = bucket.pending;
  bucket.pending = 0;
  bucket.unconfirmed += units;
  bucket.flushing = true;
  bucket.flushedAtMs = atMs;
  let written = false;
  const running = (async () => {
    let name = `the bucket of window ${bucket.window}`;
    try {
      name = await nameOf(state, bucket);
      const value = await kv.get(name, "arrayBuffer");
      state.counters.reads++;
      const merged = mergeInScratch(state, bucket, value, units);
      if (merged !== null) {
        await kv.put(name, merged, { expirationTtl: ttlSeconds(bucket.rule.windowMs) });
        state.counters.writes++;
      }
      written = true;
    } catch (error) {
      bucket.pending += units; // retried by the next flush of this bucket
      state.counters.writeFailures++;
      state.report(atMs, `KV store: flushing ${units} to ${name} failed (${/** @type {any} */ (error)?.message ?? error}); kept for the next flush`);
    } finally {
      bucket.unconfirmed -= units;
      bucket.flushing = false;
    }
  })();
  state.flushes.add(running);
  await running;
  state.flushes.delete(running);
  // What was admitted during the flush goes in the next slot (not after a failure: no retry loop).
  if (written && bucket.pending > 0 && bucket.timer === null) {
    await flushLater(state, bucket, atMs + state.flushIntervalMs, state.flushIntervalMs, kv);
  }
}

// KV's bytes plus `units`, added up by the core; null when KV already holds the result (a full window).
/** @param {KvState} state @param {Bucket} bucket @param {ArrayBuffer | null} value @param {number} units */
function mergeInScratch(state, bucket, value, units) {
  const core = state.rules.core;
  const index = loadView(state, bucket.rule, SCRATCH_KEY, value, units, bucket.lastChargeMs);
  const merged = core.exportState(index, SCRATCH_KEY);
  core.reset(index, SCRATCH_KEY);
  if (value !== null && merged !== null && sameBytes(value, merged)) return null;
  return merged;
}

// The bucket of a check's rule and key in the window `nowMs` falls in, made on first use.
/** @param {KvState} state @param {StoreCheck} check @param {number} nowMs @returns {Bucket} */
function bucketOf(state, check, nowMs) {
  const { rule, key } = check;
  // The window number names the KV key, so it is needed before the core is asked anything. It is the
  // core's own definition (fixed_window.hpp: floor(now / window_ms)); a test checks the two agree.
  const window = Math.floor(nowMs / rule.windowMs);
  const id = `${window}\u0000${rule.id}\u0000${key}`;
  let bucket = state.buckets.get(id);
  if (bucket === undefined) {
    if (state.buckets.size >= state.maxBuckets) dropIdleBuckets(state);
    bucket = {
      rule,
      key,
      window,
      name: null,
      naming: null,
      readAtMs: -Infinity,
      generation: -1,
      pending: 0,
      unconfirmed: 0,
      lastChargeMs: nowMs,
      flushing: false,
      flushedAtMs: -Infinity,
      timer: null,
    };
    state.buckets.set(id, bucket);
  }
  return bucket;
}

// Forgets the oldest buckets with nothing left to write until a tenth of the room is free.
/** @param {KvState} state */
function dropIdleBuckets(state) {
  const target = Math.floor(state.maxBuckets * 0.9);
  for (const [id, bucket] of state.buckets) {
    if (state.buckets.size <= target) return;
    if (bucket.pending === 0 && !bucket.flushing && bucket.timer === null) state.buckets.delete(id);
  }
}

// The bucket's KV key: prefix, window, rule and key; by a SHA-256 of rule and key when that is too long.
/** @param {KvState} state @param {Bucket} bucket @returns {string | Promise<string>} */
function nameOf(state, bucket) {
  if (bucket.name !== null) return bucket.name;
  const plain = `${state.prefix}${bucket.window}:${bucket.rule.id}:${bucket.key}`;
  if (utf8Length(plain) <= KV_MAX_KEY_BYTES) {
    bucket.name = plain;
    return plain;
  }
  // Too long for KV: name it by a SHA-256 of rule and key (a weak hash would let a client pick a
  // key that shares a victim's count).
  bucket.naming ??= sha256Hex(`${bucket.rule.id}\u0000${bucket.key}`).then((hash) => {
    bucket.name = `${state.prefix}${bucket.window}:sha256:${hash}`;
    return bucket.name;
  });
  return bucket.naming;
}

/** @param {Promise<unknown>} flushing @param {any} ctx */
function track(flushing, ctx) {
  if (ctx !== undefined && ctx !== null && typeof ctx.waitUntil === "function") ctx.waitUntil(flushing);
}

/**
 * reset forgets the keys of `checks`: the KV values of their current windows are deleted and this
 * isolate's views of them emptied. Other isolates see it at their next read (readIntervalMs), and
 * what they admitted but had not flushed yet still counts then: KV is approximate.
 * @param {KvState} state
 * @param {readonly StoreCheck[]} checks
 * @param {TimedStoreOptions} resetOptions
 * @returns {Promise<void>}
 */
async function reset(state, checks, resetOptions = /** @type {any} */ ({})) {
  const { nowMs, env } = resetOptions;
  checkNow(nowMs);
  const kv = resolveBinding(state.binding, env, "KV store binding");
  state.rules.indicesOf(checks);
  const names = [];
  for (const check of checks) {
    const bucket = bucketOf(state, check, nowMs);
    bucket.pending = 0;
    names.push(await nameOf(state, bucket));
    loadView(state, bucket.rule, bucket.key, null, 0, nowMs);
    bucket.readAtMs = nowMs;
    bucket.generation = state.rules.generation;
  }
  await Promise.all(names.map((name) => kv.delete(name)));
}

/** settle resolves when every flush already running has finished (pending ones stay pending). */
/** @param {KvState} state */
async function settle(state) {
  while (state.flushes.size > 0) await Promise.all([...state.flushes]);
}

/** isolateTables: the view table this store keeps in the isolate for `rule`. */
/** @param {KvState} state @param {NormalizedRule} rule @returns {IsolateTable[]} */
function isolateTables(state, rule) {
  const { algorithm, limit, keyCapacity } = viewSpec(rule);
  return [{ owner: state.owner, ruleId: rule.id, algorithm, limit, keyCapacity }];
}

/**
 * ttlSeconds is a bucket's time to live in KV: two windows, and at least KV's minimum of 60 s.
 * @param {number} windowMs
 * @returns {number}
 */
export function ttlSeconds(windowMs) {

  return Math.max(KV_MIN_TTL_SECONDS, Math.ceil((2 * windowMs) / 1000));
}

/** @param {unknown} value @param {string} field */
function checkNonNegative(value, field) {
  if (typeof value !== "number" || !(value >= 0) || value === Infinity) {
    throw new SluiceConfigError(field, `must be a finite number of milliseconds >= 0; got ${describe(value)}`);
  }
}

// UTF-8 length without encoding (lone surrogates count as the 3-byte U+FFFD they become).
/** @param {string} text @returns {number} */
function utf8Length(text) {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** @param {string} text @returns {Promise<string>} */
async function sha256Hex(text) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  let hex = "";
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
