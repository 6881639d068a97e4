// Which store a limiter's options name, built once. Every store implements one contract (store.d.ts):
//   decide(checks, { nowMs?, peek?, env?, ctx? }) -> Outcome | Promise<Outcome>
// so the engine never knows which one it talks to.
//
//   store: "memory"        the isolate's own instance (the default);
//   store: durableStore    (from sluice/stores/durable) a fallback chain: the Durable Object decides,
//                          waiting as long as each object's measured round trip needs (round-trip.js);
//                          when it fails or does not answer, the fallbacks asked for (none by default),
//                          then failMode ("closed" by default: an exact limit never quietly turns
//                          per-isolate); with `lease`, hot keys are decided from quota the object lent
//                          this isolate (leases.js) first;
//   store: kvStore         (sluice/stores/kv) a fallback chain: KV decides; when it fails, the
//                          isolate's memory, then failMode;
//   store: redisStore      (sluice/stores/redis) a fallback chain: Redis (over the Upstash REST
//                          protocol, URL and token read from env) decides exactly; when it fails or is
//                          slow, the fallbacks asked for (none by default), then failMode ("closed" by
//                          default, as for durable);
//   a store object         used as it is (build your own with createFallbackChain and friends).
//
// The remote stores are values the app imports, so an app that uses memory only bundles none of them
// (about 40 KiB of minified JS). The names "durable", "kv" and "redis" still work once their kind's
// module has run: it registers the name. SluiceDurableObject's module registers "durable", so a
// Worker that exports the object (as store "durable" requires) keeps `store: "durable"` for free.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { createMemoryStore } from "./memory.js";

/** @import { BreakerOptions } from "./breaker.js" */
/** @import { FallbackChain, FallbackChainCounters } from "./chain.js" */
/** @import { DurableStore, DurableStoreCounters } from "./durable.js" */
/** @import { KvStore, KvStoreCounters } from "./kv.js" */
/** @import { MemoryStore } from "./memory.js" */
/** @import { RedisStore, RedisStoreCounters } from "./redis.js" */
/** @import { Store } from "./store.js" */
/** @import { LeaseCounters, LeaseOptions, LeasedStore } from "./leases.js" */
/** @import { LeasedRedisStore } from "./redis-leases.js" */

/** @typedef {"memory" | "durable" | "kv" | "redis" | StoreKind | Store} StoreOption */

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
 *   | ({ store: "durable" | StoreKind<"durable"> } & DurableStoreSettings)
 *   | ({ store: "kv" | StoreKind<"kv"> } & KvStoreSettings)
 *   | ({ store: "redis" | StoreKind<"redis"> } & RedisStoreSettings)} LimiterStoreOptions
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
 * @property {{ endpoints: number, samples: number, srttMs: number, rttvarMs: number, timeoutMs: number, recent: import("./recent-round-trips.js").RecentSpread } | null} roundTrip
 *   Durable and Redis: what the round-trip estimator of its exact store knows (objects or URLs tracked, answers
 *   measured, the smoothed round trip over all of them, its variation, the timeout one not yet measured gets, and
 *   the median, 99th percentile and largest of the last round trips), or null.
 * @property {KvStoreCounters | null} kv The KV store's counters (reads, writes, failures), or null when the chain has no KV.
 * @property {RedisStoreCounters | null} redis The Redis store's counters (decisions, round trips, conflicts, clock refusals), or null.
 * @property {{ leaseMs: number, maxLeaseUnits: number, maxKeys: number, refill: boolean, locationHint?: string }} [lease] Durable with `lease` only: its settings
 *   (a locationHint function shows as "function#N").
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
export const DEFAULT_BINDINGS = /* @__PURE__ */ Object.freeze({ durable: "SLUICE_DO", kv: "SLUICE_KV" });
/**
 * For store: "redis", the env variables (wrangler secrets) holding the REST URL and token.
 * @type {Readonly<{ redisUrl: string; redisToken: string }>}
 */
export const DEFAULT_REDIS_BINDINGS = /* @__PURE__ */ Object.freeze({ redisUrl: "UPSTASH_REDIS_REST_URL", redisToken: "UPSTASH_REDIS_REST_TOKEN" });
/**
 * What decides, in order, when the named store cannot. None for the exact stores: a fallback store
 * counts per isolate (memory) or approximately (KV), so it would turn an exact limit into a looser one
 * exactly when a region is far or cut off; failMode decides instead.
 * @type {Readonly<{ durable: readonly []; kv: readonly ["memory"]; redis: readonly [] }>}
 */
export const DEFAULT_FALLBACK = /* @__PURE__ */ Object.freeze({
  durable: /** @type {readonly []} */ (/* @__PURE__ */ Object.freeze([])),
  kv: /** @type {readonly ["memory"]} */ (/* @__PURE__ */ Object.freeze(["memory"])),
  redis: /** @type {readonly []} */ (/* @__PURE__ */ Object.freeze([])),
});
/**
 * What happens when no store of the chain can decide, by default: the exact stores deny (a limit that
 * cannot be checked is not exceeded), KV admits (it is approximate already).
 * @type {Readonly<{ durable: "closed"; kv: "open"; redis: "closed" }>}
 */
export const DEFAULT_FAIL_MODES = /* @__PURE__ */ Object.freeze({ durable: "closed", kv: "open", redis: "closed" });
const REMOTE_NAMES = ["durable", "kv", "redis"];
/**
 * The stores a limiter's `store` option names (docs/stores.md has a row for each).
 * @type {readonly string[]}
 */
export const STORE_NAMES = /* @__PURE__ */ Object.freeze(["memory", ...REMOTE_NAMES]);

/** @type {MemoryStore | null} */
let isolateMemory = null;
/**
 * Every remote chain built in this isolate, with its parts, for storeStats() (remote.js adds them).
 * @type {Array<{ settings: any; chain: FallbackChain; durable: DurableStore | null; kv: KvStore | null; leased: LeasedStore | LeasedRedisStore | null; redis: RedisStore | null }>}
 */
export const builtChains = [];

/**
 * memoryStore returns this isolate's memory store (built on first use): the default store, and the
 * last fallback of every chain.
 * @returns {MemoryStore}
 */
export function memoryStore() {
  return (isolateMemory ??= createMemoryStore());
}

/**
 * A remote store the app imports (sluice/stores/durable, /kv, /redis): its name, and how it turns a
 * limiter's store options into a store.
 * @template {"durable" | "kv" | "redis"} [Name="durable" | "kv" | "redis"]
 * @typedef {{ readonly kind: Name; readonly build: (options: any) => Store }} StoreKind
 */

/** @type {Map<string, StoreKind>} */
const kinds = new Map();

/**
 * registerStoreKind lets options name `kind` by its string ("durable", "kv", "redis") from now on in
 * this isolate; each kind's module calls it when it loads.
 * @param {StoreKind} kind
 */
export function registerStoreKind(kind) {
  kinds.set(kind.kind, kind);
}

/**
 * @param {unknown} store
 * @returns {store is StoreKind}
 */
function isStoreKind(store) {
  return store !== null && typeof store === "object" && typeof (/** @type {any} */ (store).build) === "function" && REMOTE_NAMES.includes(/** @type {any} */ (store).kind);
}

/**
 * storeName is the name of the store `store` names: "memory" (also when undefined), "durable", "kv",
 * "redis" (a string or the kind's value), or undefined for a store object or anything else.
 * @param {unknown} store
 * @returns {string | undefined}
 */
export function storeName(store) {
  if (store === undefined) return "memory";
  if (typeof store === "string") return store;
  return isStoreKind(store) ? store.kind : undefined;
}

// The string of a remote store whose module has not run: say which import brings it.
/** @param {string} name @returns {SluiceConfigError} */
function unregistered(name) {
  const also = name === "durable" ? " (exporting SluiceDurableObject from \"sluice/durable-object\" registers 'durable' too)" : "";
  return new SluiceConfigError(
    "store",
    `'${name}' is not loaded: import { ${name}Store } from "sluice/stores/${name}" and pass store: ${name}Store${also}. ` +
      "Remote stores are imported values, so an app that does not use them does not bundle them",
  );
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
  if (isStoreKind(store)) {
    registerStoreKind(store);
    return store.build(options);
  }
  if (typeof store === "string" && REMOTE_NAMES.includes(store)) {
    const kind = kinds.get(store);
    if (kind === undefined) throw unregistered(store);
    return kind.build(options);
  }
  const isObject = store !== null && typeof store === "object" && typeof store.decide === "function";
  if (store !== "memory" && !isObject) {
    throw new SluiceConfigError(
      "store",
      `must be 'memory', durableStore, kvStore, redisStore (or their names once loaded) or a store object with decide(); got ${describe(store)}`,
    );
  }
  for (const field of REMOTE_FIELDS) {
    if (options[field] !== undefined) {
      const which = isObject ? "a store object (configure it where you build it)" : "'memory'";
      throw new SluiceConfigError(field, `applies to store 'durable', 'kv' and 'redis'; this limiter's store is ${which}`);
    }
  }
  return isObject ? store : memoryStore();
}

/**
 * storeStats reports, for every durable, KV or Redis chain this isolate built, its settings and
 * counters: decisions per store, fallbacks, pre-filtered denials, errors and timeouts per store, and
 * those of its Durable Object client, its leases (`leases`, null without), Redis store and KV store.
 * @returns {StoreStats[]}
 */
export function storeStats() {
  return builtChains.map(({ settings, chain, durable, kv, leased, redis }) => ({
    ...settings,
    counters: structuredClone(chain.counters),
    durable: durable === null ? null : { ...durable.counters },
    roundTrip: durable !== null ? durable.roundTrip.summary : redis !== null ? redis.roundTrip : null,
    leases: leased === null ? null : { ...leased.counters },
    redis: redis === null ? null : { ...redis.counters },
    kv: kv === null ? null : { ...kv.counters },
  }));
}
