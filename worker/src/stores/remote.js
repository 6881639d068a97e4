// The stores that live outside the isolate: "durable", "kv" and "redis", each a fallback chain (the
// named store decides; when it fails or is slow, the next of `fallback`, then failMode). Reached only
// through a store kind's module (kinds/durable.js, kinds/kv.js, kinds/redis.js), which hands in the
// parts it needs: an app that names no remote store bundles none of this.
//
// Bindings are named here and looked up in `env` per request, since the middleware is built before
// any env exists. Stores with the same settings are built once per module instance and shared, so
// limiters that share a KV binding share one view of it, and a chain's counters add up across them.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { checkBreakerOptions } from "./breaker.js";
import { createFallbackChain } from "./chain.js";
import { DEFAULT_BINDINGS, DEFAULT_FAIL_MODES, DEFAULT_FALLBACK, DEFAULT_REDIS_BINDINGS, builtChains, memoryStore } from "./registry.js";
import { DEFAULT_LOG_INTERVAL_MS } from "./throttled-log.js";

/** @import { FallbackChain } from "./chain.js" */
/** @import { DurableStore } from "./durable.js" */
/** @import { KvStore } from "./kv.js" */
/** @import { Store } from "./store.js" */

/**
 * The store builders a kind's module brings: the KV store always (every chain may fall back to it),
 * the others only where the kind uses them.
 * @typedef {object} StoreParts
 * @property {typeof import("./kv.js").createKvStore} createKvStore
 * @property {typeof import("./durable.js").createDurableStore} [createDurableStore]
 * @property {typeof import("./leases.js").createLeasedStore} [createLeasedStore]
 * @property {typeof import("./leases.js").checkLeaseOptions} [checkLeaseOptions]
 * @property {typeof import("./regional.js").createRegionalStore} [createRegionalStore]
 * @property {typeof import("./location-hints.js").hintId} [hintId]
 * @property {typeof import("./redis.js").createRedisStore} [createRedisStore]
 * @property {typeof import("./redis-leases.js").createLeasedRedisStore} [createLeasedRedisStore]
 */

const FALLBACK_ORDER = ["kv", "memory"];
/** @type {Map<string, any>} */
const built = new Map(); // settings id -> a store (or store part) shared by every limiter with those settings

/**
 * @template T
 * @param {T | undefined} part
 * @param {string} kind
 * @returns {T}
 */
function need(part, kind) {
  if (part === undefined) throw new TypeError(`sluice: the store kind '${kind}' was registered without the part it needs`);
  return part;
}

/** @param {unknown} value @returns {value is Record<string, unknown>} */
function isPlainObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * The binding names of store `kind`: its own (durable, or redisUrl and redisToken) and kv's; the
 * callers read only those of the kind they passed.
 * @typedef {Readonly<Record<"durable" | "kv" | "redisUrl" | "redisToken", string>>} BindingNames
 */
/** @param {unknown} bindings @param {keyof typeof DEFAULT_FALLBACK} kind @returns {BindingNames} */
function normalizeBindings(bindings, kind) {
  const defaults = kind === "redis" ? { kv: DEFAULT_BINDINGS.kv, ...DEFAULT_REDIS_BINDINGS } : DEFAULT_BINDINGS;
  if (bindings === undefined) return /** @type {BindingNames} */ (defaults);
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
  return /** @type {BindingNames} */ (Object.freeze({ ...defaults, ...bindings }));
}

/** @param {unknown} fallback @param {keyof typeof DEFAULT_FALLBACK} kind @returns {readonly string[]} */
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

/** @template T @param {string} id @param {() => T} build @returns {T} */
function shared(id, build) {
  let store = built.get(id);
  if (store === undefined) {
    store = build();
    built.set(id, store);
  }
  return store;
}

// Store "redis" reads its REST URL and token from env: both must be non-empty strings.
/** @param {any} env @param {{ redisUrl?: string; redisToken?: string }} bindings */
function checkRedisEnv(env, bindings) {
  for (const [field, name] of [["redisUrl", bindings.redisUrl], ["redisToken", bindings.redisToken]]) {
    const value = env !== null && typeof env === "object" ? env[/** @type {string} */ (name)] : undefined;
    if (typeof value !== "string" || value === "") {
      throw new SluiceConfigError(`bindings.${field}`, `names ${JSON.stringify(name)}, which env does not set: add it (wrangler secret put ${name}), or choose another store`);
    }
  }
}

/**
 * buildRemoteStore turns the options of store `kind` ("durable", "kv" or "redis") into its fallback
 * chain, built once per settings and shared, from the store parts `parts` the kind's module brings
 * (so an app pays only for the stores it names). Throws a SluiceConfigError naming a bad option.
 * @param {"durable" | "kv" | "redis"} kind
 * @param {any} options
 * @param {StoreParts} parts
 * @returns {Store}
 */
export function buildRemoteStore(kind, options, parts) {
  const bindings = normalizeBindings(options.bindings, kind);
  const fallback = normalizeFallback(options.fallback, kind);
  if (kind !== "durable" && options.shards !== undefined) throw new SluiceConfigError("shards", `applies to store 'durable', not '${kind}'`);
  if (kind === "kv" && options.lease !== undefined) throw new SluiceConfigError("lease", "applies to store 'durable' and 'redis', not 'kv'");
  const lease = kind !== "kv" && parts.checkLeaseOptions !== undefined ? parts.checkLeaseOptions(options.lease) : null;
  if (kind === "redis" && lease?.locationHint !== undefined) throw new SluiceConfigError("lease.locationHint", "applies to store 'durable' (a regional object), not 'redis'");
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
    // A location hint that is a function is named for sharing and for storeStats() (location-hints.js).
    ...(lease === null ? {} : { lease: lease.locationHint === undefined ? lease : { ...lease, locationHint: need(parts.hintId, kind)(lease.locationHint) } }),
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
    kind === "durable"
      ? lease?.locationHint === undefined
        ? shared(`durable|${bindings.durable}|${shards}`, () => need(parts.createDurableStore, kind)({ binding: bindings.durable, shards }))
        : // Through a regional object near this isolate (docs/leases.md, "A regional tier").
          shared(`regional|${bindings.durable}|${shards}|${settings.lease?.locationHint}|${lease.leaseMs}|${lease.maxLeaseUnits}`, () =>
            need(parts.createRegionalStore, kind)({ binding: bindings.durable, shards, locationHint: /** @type {any} */ (lease.locationHint), leaseMs: lease.leaseMs, maxLeaseUnits: lease.maxLeaseUnits }),
          )
      : null;
  // Leases wrap the object's client; one per client and lease settings, shared like it.
  const leased =
    lease === null || durable === null
      ? null
      : shared(`leased|${bindings.durable}|${shards}|${JSON.stringify(settings.lease)}`, () => withRoundTrips(need(parts.createLeasedStore, kind)({ durable, ...lease }), durable));
  const redis =
    kind === "redis"
      ? // The Redis store bounds its own calls from their send, with the timeout it learns per REST URL
        // unless timeoutMs was given (then that, fixed); the chain adds no deadline around it.
        shared(`redis|${bindings.redisUrl}|${bindings.redisToken}|${timeoutMs ?? "learnt"}`, () =>
          need(parts.createRedisStore, kind)({ urlEnv: bindings.redisUrl, tokenEnv: bindings.redisToken, ...(timeoutMs === undefined ? {} : { timeoutMs }) }),
        )
      : null;
  // Leases over compare-and-set (redis-leases.js), shared like the Redis store.
  const leasedRedis =
    lease === null || redis === null
      ? null
      : shared(`leased-redis|${bindings.redisUrl}|${bindings.redisToken}|${timeoutMs ?? "learnt"}|${JSON.stringify(lease)}`, () =>
          need(parts.createLeasedRedisStore, kind)({ redis, ...lease }),
        );
  const usesKv = kind === "kv" || fallback.includes("kv");
  const kv = usesKv ? shared(`kv|${bindings.kv}|${logIntervalMs}`, () => parts.createKvStore({ binding: bindings.kv, logIntervalMs })) : null;
  const chain = createFallbackChain({
    primary: leased ?? durable ?? leasedRedis ?? redis ?? kv,
    kv: durable !== null || redis !== null ? kv : null,
    memory: fallback.includes("memory") ? memoryStore() : null,
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
    // The dev bypass decides nothing, so checkBindings checks the two variables (and a KV asked for).
    const redisChain = {
      ...chain,
      /** @type {FallbackChain["decide"]} */
      decide(checks, options) {
        checkKvBound(options);
        return chain.decide(checks, options);
      },
      /** @param {any} env */
      checkBindings(env) {
        checkRedisEnv(env, bindings);
        checkKvBound({ env });
      },
    };
    built.set(id, redisChain);
    builtChains.push({ settings: Object.freeze(settings), chain, durable, kv, leased: leasedRedis, redis });
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
    /** @param {unknown} env */
    checkBindings(env) {
      checkBound({ env: /** @type {object} */ (env) });
      checkKvBound({ env: /** @type {object} */ (env) });
    },
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
  builtChains.push({ settings: Object.freeze(settings), chain, durable, kv, leased, redis });
  return guarded;
}

// The leased store with the object client's round trips: the chain sizes its wait for the object (and
// takes back late charges) through the client that makes the calls. Delegating through the prototype
// keeps every member of the leased store as it is.
/** @param {any} leased @param {any} durable */
function withRoundTrips(leased, durable) {
  return Object.assign(Object.create(leased), { timeoutFor: durable.timeoutFor, timedOut: durable.timedOut, takeBack: durable.takeBack });
}
