// Which store a limiter's options name, built once. Every store implements one contract (store.d.ts):
//   decide(checks, { nowMs?, peek?, env?, ctx? }) -> Outcome | Promise<Outcome>
// so the engine never knows which one it talks to.
//
//   store: "memory"   the isolate's own instance (the default);
//   store: "durable"  a fallback chain: the Durable Object decides, waiting as long as each object's
//                     measured round trip needs (round-trip.js); when it fails or does not answer, the
//                     fallbacks asked for (none by default), then failMode ("closed" by default: an
//                     exact limit never quietly turns per-isolate); with `lease`, hot keys are decided
//                     from quota the object lent this isolate (leases.js) first;
//   store: "kv"       a fallback chain: KV decides; when it fails, the isolate's memory, then failMode;
//   store: "redis"    a fallback chain: Redis (over the Upstash REST protocol, URL and token read from
//                     env) decides exactly; when it fails or is slow, the fallbacks asked for (none by
//                     default), then failMode ("closed" by default, as for "durable");
//   a store object    used as it is (build your own with createFallbackChain and friends).
//
// Bindings are named here and looked up in `env` per request, since the middleware is built before
// any env exists. Stores with the same settings are built once per module instance and shared, so
// limiters that share a KV binding share one view of it, and a chain's counters add up across them.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { checkBreakerOptions } from "./breaker.js";
import { createFallbackChain } from "./chain.js";
import { createDurableStore } from "./durable.js";
import { createKvStore } from "./kv.js";
import { checkLeaseOptions, createLeasedStore } from "./leases.js";
import { createMemoryStore } from "./memory.js";
import { DEFAULT_REDIS_ENV, createRedisStore } from "./redis.js";
import { createLeasedRedisStore } from "./redis-leases.js";
import { DEFAULT_LOG_INTERVAL_MS } from "./throttled-log.js";

/** @import { BreakerOptions } from "./breaker.js" */
/** @import { FallbackChain, FallbackChainCounters } from "./chain.js" */
/** @import { DurableStore, DurableStoreCounters } from "./durable.js" */
/** @import { KvStore, KvStoreCounters } from "./kv.js" */
/** @import { MemoryStore } from "./memory.js" */
/** @import { RedisStore, RedisStoreCounters } from "./redis.js" */
/** @import { Store } from "./store.js" */
/** @import { LeaseCounters, LeaseOptions, LeasedStore } from "./leases.js" */

/** @typedef {"memory" | "durable" | "kv" | "redis" | Store} StoreOption */

/**
 * durable and kv: the fallback chain's settings.
 * @typedef {object} ChainSettings
 * @property {"open" | "closed"} [failMode] "open" admits, "closed" denies (Retry-After 1 s) when no store can answer; default
 *   "closed" for the exact stores (durable, redis), "open" for kv.
 * @property {number} [timeoutMs] How long each store may take before the next decides, fixed; default: the Durable Object's
 *   timeout follows each object's measured round trip (RFC 6298, 1 s before the first answer), others 50 ms.
 * @property {BreakerOptions | boolean} [breaker] Skip a failing primary: after `failures` failures in a row, for `cooldownMs`,
 *   then probe it with one request; default { failures: 5, cooldownMs: 10000 }; false turns it off.
 * @property {boolean} [preFilter] Deny keys the store denied from this isolate, with no round trip, until their retry time; default true.
 * @property {number} [logIntervalMs] Fallbacks and failed KV writes are logged at most once per interval; default 60000.
 */

/**
 * The settings of store: "durable": a Durable Object, falling back to KV (if bound), then memory, then failMode.
 * @typedef {ChainSettings & DurableOnlySettings} DurableStoreSettings
 */
/**
 * @typedef {object} DurableOnlySettings
 * @property {{ durable?: string; kv?: string }} [bindings] The binding names in env; default { durable: "SLUICE_DO", kv: "SLUICE_KV" }.
 * @property {number | "key"} [shards] How many objects share the keys (by a hash of the key), or "key" for one per key; default 1.
 * @property {boolean | LeaseOptions} [lease] Let isolates decide hot keys from quota the object lent them, exactly
 *   (docs/leases.md); default off.
 * @property {readonly [] | readonly ["kv"] | readonly ["memory"] | readonly ["kv", "memory"]} [fallback] Who decides, in this
 *   order, when the object cannot; default [] (none: failMode decides). A fallback weakens the exact limit while it decides
 *   (decision.fallback.weakened, the X-RateLimit-Fallback header, storeStats().counters.weakened).
 */

/**
 * The settings of store: "kv": Workers KV, falling back to memory, then failMode.
 * @typedef {ChainSettings & KvOnlySettings} KvStoreSettings
 */
/**
 * @typedef {object} KvOnlySettings
 * @property {{ kv?: string }} [bindings] The KV binding's name in env; default { kv: "SLUICE_KV" }.
 * @property {undefined} [shards] Durable only.
 * @property {undefined} [lease] Durable only.
 * @property {readonly [] | readonly ["memory"]} [fallback] Who decides when KV cannot; default ["memory"]; [] for none.
 */

/**
 * The settings of store: "redis": Redis over the Upstash REST protocol (docs/redis.md), falling back to
 * memory, then failMode.
 * @typedef {ChainSettings & RedisOnlySettings} RedisStoreSettings
 */
/**
 * @typedef {object} RedisOnlySettings
 * @property {{ redisUrl?: string; redisToken?: string; kv?: string }} [bindings] The env variables (wrangler secrets)
 *   holding the REST URL and token, and the KV binding of a kv fallback; default { redisUrl: "UPSTASH_REDIS_REST_URL",
 *   redisToken: "UPSTASH_REDIS_REST_TOKEN", kv: "SLUICE_KV" }.
 * @property {undefined} [shards] Durable only.
 * @property {boolean | LeaseOptions} [lease] Let isolates decide hot keys from quota Redis lent them, exactly (leases over
 *   compare-and-set: docs/redis.md); default off.
 * @property {readonly [] | readonly ["kv"] | readonly ["memory"] | readonly ["kv", "memory"]} [fallback] Who decides, in
 *   this order, when Redis cannot; default [] (none: failMode decides).
 */

/**
 * The options of a limiter or middleware that choose and tune its store. `store` is where counts
 * live; default "memory" (this isolate's instance), which takes no settings, nor does a store object of
 * your own (configure it where you build it). "durable": exact, in a Durable Object; "kv": approximate,
 * in Workers KV; each with its settings.
 * @typedef {({ store?: "memory" | Store } & { [Setting in keyof DurableStoreSettings]?: undefined })
 *   | ({ store: "durable" } & DurableStoreSettings)
 *   | ({ store: "kv" } & KvStoreSettings)
 *   | ({ store: "redis" } & RedisStoreSettings)} LimiterStoreOptions
 */

/**
 * The settings and counters of one durable or KV chain built in this isolate.
 * @typedef {object} StoreStats
 * @property {"durable" | "kv" | "redis"} store
 * @property {{ durable?: string; kv: string; redisUrl?: string; redisToken?: string }} bindings
 * @property {number | "key"} [shards] Durable only.
 * @property {ReadonlyArray<"kv" | "memory">} fallback
 * @property {"open" | "closed"} failMode
 * @property {number | "adaptive"} timeoutMs A fixed timeout, or "adaptive": per store endpoint, from its measured round trips.
 * @property {Readonly<Required<BreakerOptions>> | false} breaker The breaker's settings, or false when it is off.
 * @property {boolean} preFilter
 * @property {number} logIntervalMs
 * @property {FallbackChainCounters} counters Decisions per store ("failMode" when none could), fallbacks, pre-filtered
 *   denials, errors and timeouts per store.
 * @property {DurableStoreCounters | null} durable The Durable Object client's counters (requests spread over objects, undone charges), or null.
 * @property {{ endpoints: number, samples: number, srttMs: number, rttvarMs: number, timeoutMs: number } | null} roundTrip
 *   Durable only: what its round-trip estimator knows (objects tracked, answers measured, the smoothed round trip over all
 *   objects, its variation, and the timeout an object not yet measured gets), or null.
 * @property {KvStoreCounters | null} kv The KV store's counters (reads, writes, failures), or null when the chain has no KV.
 * @property {RedisStoreCounters | null} redis The Redis store's counters (decisions, round trips, conflicts, clock refusals), or null.
 * @property {{ leaseMs: number, maxLeaseUnits: number, maxKeys: number }} [lease] Durable with `lease` only: its settings.
 * @property {LeaseCounters | null} leases The leases' counters (round trips, leased decisions, leases granted, units
 *   lent / returned / stranded), or null without `lease`.
 */

/**
 * The options that choose and tune the store.
 * @type {readonly string[]}
 */
export const STORE_FIELDS = Object.freeze(["store", "bindings", "shards", "lease", "fallback", "failMode", "timeoutMs", "breaker", "preFilter", "logIntervalMs"]);
// Those that apply to store: "durable", "kv" and "redis" only.
const REMOTE_FIELDS = STORE_FIELDS.filter((field) => field !== "store");

/**
 * The binding names wrangler.toml declares for the Durable Object and the KV namespace.
 * @type {Readonly<{ durable: string; kv: string }>}
 */
export const DEFAULT_BINDINGS = Object.freeze({ durable: "SLUICE_DO", kv: "SLUICE_KV" });
/**
 * For store: "redis", the env variables (wrangler secrets) holding the REST URL and token.
 * @type {Readonly<{ redisUrl: string; redisToken: string }>}
 */
export const DEFAULT_REDIS_BINDINGS = Object.freeze({ redisUrl: DEFAULT_REDIS_ENV.url, redisToken: DEFAULT_REDIS_ENV.token });
/**
 * What decides, in order, when the named store cannot. None for the exact stores: a fallback store
 * counts per isolate (memory) or approximately (KV), so it would turn an exact limit into a looser one
 * exactly when a region is far or cut off; failMode decides instead.
 * @type {Readonly<{ durable: readonly []; kv: readonly ["memory"]; redis: readonly [] }>}
 */
export const DEFAULT_FALLBACK = Object.freeze({
  durable: /** @type {readonly []} */ (Object.freeze([])),
  kv: /** @type {readonly ["memory"]} */ (Object.freeze(["memory"])),
  redis: /** @type {readonly []} */ (Object.freeze([])),
});
/**
 * What happens when no store of the chain can decide, by default: the exact stores deny (a limit that
 * cannot be checked is not exceeded), KV admits (it is approximate already).
 * @type {Readonly<{ durable: "closed"; kv: "open"; redis: "closed" }>}
 */
export const DEFAULT_FAIL_MODES = Object.freeze({ durable: "closed", kv: "open", redis: "closed" });
const FALLBACK_ORDER = ["kv", "memory"];

/** @type {MemoryStore | null} */
let memoryStore = null;
/** @type {Map<string, any>} */
const built = new Map(); // settings id -> a store (or store part) shared by every limiter with those settings
/** @type {Array<{ settings: any; chain: FallbackChain; durable: DurableStore | null; kv: KvStore | null; leased: { counters: LeaseCounters } | null; redis: RedisStore | null }>} */
const chains = []; // every chain built here, with its parts, for storeStats()

function isPlainObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function normalizeBindings(bindings, kind) {
  const defaults = kind === "redis" ? { kv: DEFAULT_BINDINGS.kv, ...DEFAULT_REDIS_BINDINGS } : DEFAULT_BINDINGS;
  if (bindings === undefined) return defaults;
  const known = Object.keys(defaults).join(", ");
  if (!isPlainObject(bindings)) throw new SluiceConfigError("bindings", `must be an object { ${known.replaceAll(",", "?,")}? }; got ${describe(bindings)}`);
  for (const [name, value] of Object.entries(bindings)) {
    if (name === "durable" && kind !== "durable") throw new SluiceConfigError("bindings.durable", `applies to store 'durable', not '${kind}'`);
    if (Object.hasOwn(DEFAULT_REDIS_BINDINGS, name) && kind !== "redis") {
      throw new SluiceConfigError(`bindings.${name}`, `applies to store 'redis', not '${kind}'`);
    }
    if (!Object.hasOwn(defaults, name)) throw new SluiceConfigError(`bindings.${name}`, `is not a binding sluice uses (known: ${known})`);
    if (typeof value !== "string" || value === "") {
      throw new SluiceConfigError(`bindings.${name}`, `must be the name of a binding in env; got ${describe(value)}`);
    }
  }
  return Object.freeze({ ...defaults, ...bindings });
}

function normalizeFallback(fallback, kind) {
  if (fallback === undefined) return DEFAULT_FALLBACK[kind];
  const allowed = FALLBACK_ORDER.filter((name) => name !== kind);
  const wanted = `an array of ${allowed.map((name) => `'${name}'`).join(" and ")}, in that order (or [] for none)`;
  if (!Array.isArray(fallback)) throw new SluiceConfigError("fallback", `must be ${wanted}; got ${describe(fallback)}`);
  fallback.forEach((name, i) => {
    if (!allowed.includes(name)) throw new SluiceConfigError(`fallback[${i}]`, `must be ${allowed.map((n) => `'${n}'`).join(" or ")}; got ${describe(name)}`);
    if (i > 0 && allowed.indexOf(fallback[i - 1]) >= allowed.indexOf(name)) {
      throw new SluiceConfigError("fallback", `must be ${wanted}: the chain asks KV before memory`);
    }
  });
  return Object.freeze([...fallback]);
}

function shared(id, build) {
  let store = built.get(id);
  if (store === undefined) {
    store = build();
    built.set(id, store);
  }
  return store;
}

// A durable or KV chain from its options (validated here or by the store factories, naming the field).
function remoteStore(kind, options) {
  const bindings = normalizeBindings(options.bindings, kind);
  const fallback = normalizeFallback(options.fallback, kind);
  if (kind !== "durable" && options.shards !== undefined) throw new SluiceConfigError("shards", `applies to store 'durable', not '${kind}'`);
  if (kind === "kv" && options.lease !== undefined) throw new SluiceConfigError("lease", "applies to store 'durable' and 'redis', not 'kv'");
  const lease = kind === "kv" ? null : checkLeaseOptions(options.lease);
  const {
    shards = 1,
    failMode = DEFAULT_FAIL_MODES[kind],
    timeoutMs,
    preFilter = true,
    logIntervalMs = DEFAULT_LOG_INTERVAL_MS,
  } = options;
  const breaker = checkBreakerOptions(options.breaker) ?? false;
  const settings = {
    store: kind,
    bindings: kind === "kv" ? Object.freeze({ kv: bindings.kv }) : bindings,
    shards: kind === "durable" ? shards : undefined,
    ...(lease === null ? {} : { lease }),
    fallback,
    failMode,
    timeoutMs: timeoutMs ?? "adaptive",
    breaker,
    preFilter,
    logIntervalMs,
  };
  const id = JSON.stringify(settings, (_, value) => (value === Infinity ? "Infinity" : value));
  const existing = built.get(id);
  if (existing !== undefined) return existing;

  // The parts are shared too: one client per object layout, one view of each KV namespace.
  const durable =
    kind === "durable" ? shared(`durable|${bindings.durable}|${shards}`, () => createDurableStore({ binding: bindings.durable, shards })) : null;
  // Leases wrap the object's client; one per client and lease settings, shared like it.
  const leased =
    lease === null || durable === null
      ? null
      : shared(`leased|${bindings.durable}|${shards}|${JSON.stringify(lease)}`, () => withRoundTrips(createLeasedStore({ durable, ...lease }), durable));
  const redis =
    kind === "redis"
      ? // The Redis store bounds its own calls from their send, with the timeout it learns per REST URL
        // unless timeoutMs was given (then that, fixed); the chain adds no deadline around it.
        shared(`redis|${bindings.redisUrl}|${bindings.redisToken}|${timeoutMs ?? "learnt"}`, () =>
          createRedisStore({ urlEnv: bindings.redisUrl, tokenEnv: bindings.redisToken, ...(timeoutMs === undefined ? {} : { timeoutMs }) }),
        )
      : null;
  // Leases over compare-and-set (redis-leases.js), shared like the Redis store.
  const leasedRedis =
    lease === null || redis === null
      ? null
      : shared(`leased-redis|${bindings.redisUrl}|${bindings.redisToken}|${timeoutMs ?? "learnt"}|${JSON.stringify(lease)}`, () =>
          createLeasedRedisStore({ redis, ...lease }),
        );
  const usesKv = kind === "kv" || fallback.includes("kv");
  const kv = usesKv ? shared(`kv|${bindings.kv}|${logIntervalMs}`, () => createKvStore({ binding: bindings.kv, logIntervalMs })) : null;
  const chain = createFallbackChain({
    primary: leased ?? durable ?? leasedRedis ?? redis ?? kv,
    kv: durable !== null || redis !== null ? kv : null,
    memory: fallback.includes("memory") ? resolveMemory() : null,
    failMode,
    timeoutMs,
    breaker,
    preFilter,
    logIntervalMs,
  });
  // A KV fallback asked for by name must be bound when passing over it would leave the decision to
  // something weaker than KV (the isolate's memory, or failMode "open"): that is a deployment mistake
  // that quietly turns a global limit into a per-isolate one. With failMode "closed" and nothing after
  // KV, passing over it only denies, and stays allowed.
  const kvAskedFor = options.fallback !== undefined && fallback.includes("kv") && kind !== "kv" && (fallback.includes("memory") || failMode === "open");
  /** @param {{ env?: object } | undefined} options */
  const checkKvBound = (options) => {
    if (kvAskedFor && kv !== null && !kv.isBound(options?.env)) {
      throw new SluiceConfigError(
        "bindings.kv",
        `names ${JSON.stringify(bindings.kv)}, which env does not have, and fallback asks for 'kv' before a weaker decider: declare it in wrangler.toml ([[kv_namespaces]]), or leave 'kv' out of fallback`,
      );
    }
  };
  if (redis !== null) {
    // The Redis store checks its own configuration (URL and token in env) at first use and throws a
    // SluiceConfigError naming the env variable, which the chain passes on rather than falling back.
    const redisChain = kvAskedFor
      ? {
          ...chain,
          /** @type {FallbackChain["decide"]} */
          decide(checks, options) {
            checkKvBound(options);
            return chain.decide(checks, options);
          },
        }
      : chain;
    built.set(id, redisChain);
    chains.push({ settings: Object.freeze(settings), chain, durable, kv, leased: leasedRedis, redis });
    return redisChain;
  }
  // The store the options name must be bound, on every surface (the gateway too): a missing binding
  // is a deployment mistake, and falling back for it would quietly turn an exact (durable) or global
  // (kv) limit into a per-isolate one, N times as loose across N isolates. A binding that is present
  // but fails still falls back, as configured.
  const primary = /** @type {DurableStore | KvStore} */ (durable ?? kv);
  const bindingName = kind === "durable" ? bindings.durable : bindings.kv;
  /** @param {{ env?: object } | undefined} options */
  const checkBound = (options) => {
    if (!primary.isBound(options?.env)) {
      throw new SluiceConfigError(
        `bindings.${kind}`,
        `names ${JSON.stringify(bindingName)}, which env does not have: declare it in wrangler.toml (${kind === "durable" ? "[[durable_objects.bindings]]" : "[[kv_namespaces]]"}), or choose another store`,
      );
    }
  };
  const guarded = {
    ...chain,
    /** @type {FallbackChain["decide"]} */
    decide(checks, options) {
      checkBound(options);
      checkKvBound(options);
      return chain.decide(checks, options);
    },
    /** @type {FallbackChain["reset"]} */
    reset(checks, options) {
      checkBound(options);
      return chain.reset(checks, options);
    },
  };
  built.set(id, guarded);
  chains.push({ settings: Object.freeze(settings), chain, durable, kv, leased, redis });
  return guarded;
}

// The leased store with the object client's round trips: the chain sizes its wait for the object (and
// takes back late charges) through the client that makes the calls. Delegating through the prototype
// keeps every member of the leased store as it is.
function withRoundTrips(leased, durable) {
  return Object.assign(Object.create(leased), { timeoutFor: durable.timeoutFor, timedOut: durable.timedOut, takeBack: durable.takeBack });
}

function resolveMemory() {
  return (memoryStore ??= createMemoryStore());
}

/**
 * resolveStore turns the store options ({ store, bindings, shards, lease, fallback, failMode, timeoutMs,
 * breaker, preFilter, logIntervalMs }) into a store, or throws a SluiceConfigError naming the option.
 * A durable or KV store whose binding env lacks throws a SluiceConfigError naming it on the first
 * request (a Redis store, one naming the missing env variable); a binding that fails falls back.
 * @param {any} [options]
 * @returns {Store}
 */
export function resolveStore(options = {}) {
  const { store = "memory" } = options;
  if (store === "durable" || store === "kv" || store === "redis") return remoteStore(store, options);
  const isObject = store !== null && typeof store === "object" && typeof store.decide === "function";
  if (store !== "memory" && !isObject) {
    throw new SluiceConfigError("store", `must be 'memory', 'durable', 'kv', 'redis' or a store object with decide(); got ${describe(store)}`);
  }
  for (const field of REMOTE_FIELDS) {
    if (options[field] !== undefined) {
      const which = isObject ? "a store object (configure it where you build it)" : "'memory'";
      throw new SluiceConfigError(field, `applies to store 'durable', 'kv' and 'redis'; this limiter's store is ${which}`);
    }
  }
  return isObject ? store : resolveMemory();
}

/**
 * storeStats reports, for every durable, KV or Redis chain this isolate built, its settings and
 * counters: decisions per store, fallbacks, pre-filtered denials, errors and timeouts per store, and
 * those of its Durable Object client, its leases (`leases`, null without), Redis store and KV store.
 * @returns {StoreStats[]}
 */
export function storeStats() {
  return chains.map(({ settings, chain, durable, kv, leased, redis }) => ({
    ...settings,
    counters: structuredClone(chain.counters),
    durable: durable === null ? null : { ...durable.counters },
    roundTrip: durable === null ? null : durable.roundTrip.summary,
    leases: leased === null ? null : { ...leased.counters },
    redis: redis === null ? null : { ...redis.counters },
    kv: kv === null ? null : { ...kv.counters },
  }));
}
