// Which store a limiter's options name, built once. Every store implements one contract (store.d.ts):
//   decide(checks, { nowMs?, peek?, env?, ctx? }) -> Outcome | Promise<Outcome>
// so the engine never knows which one it talks to.
//
//   store: "memory"   the isolate's own instance (the default);
//   store: "durable"  a fallback chain: the Durable Object decides; when it fails or is slow, KV (if
//                     bound), then the isolate's memory, then failMode; with `lease`, hot keys are
//                     decided from quota the object lent this isolate (leases.js) first;
//   store: "kv"       a fallback chain: KV decides; when it fails, the isolate's memory, then failMode;
//   a store object    used as it is (build your own with createFallbackChain and friends).
//
// Bindings are named here and looked up in `env` per request, since the middleware is built before
// any env exists. Stores with the same settings are built once per module instance and shared, so
// limiters that share a KV binding share one view of it, and a chain's counters add up across them.
import { SluiceConfigError, describe } from "../errors.js";
import { checkBreakerOptions } from "./breaker.js";
import { DEFAULT_FAIL_MODE, DEFAULT_TIMEOUT_MS, createFallbackChain } from "./chain.js";
import { createDurableStore } from "./durable.js";
import { createKvStore } from "./kv.js";
import { checkLeaseOptions, createLeasedStore } from "./leases.js";
import { createMemoryStore } from "./memory.js";
import { DEFAULT_LOG_INTERVAL_MS } from "./throttled-log.js";

/** The options that choose and tune the store. */
export const STORE_FIELDS = Object.freeze(["store", "bindings", "shards", "lease", "fallback", "failMode", "timeoutMs", "breaker", "preFilter", "logIntervalMs"]);
// Those that apply to store: "durable" and "kv" only.
const REMOTE_FIELDS = STORE_FIELDS.filter((field) => field !== "store");

/** The binding names wrangler.toml declares for the Durable Object and the KV namespace. */
export const DEFAULT_BINDINGS = Object.freeze({ durable: "SLUICE_DO", kv: "SLUICE_KV" });
/** What decides, in order, when the named store cannot. */
export const DEFAULT_FALLBACK = Object.freeze({ durable: Object.freeze(["kv", "memory"]), kv: Object.freeze(["memory"]) });
const FALLBACK_ORDER = ["kv", "memory"];

let memoryStore = null;
const built = new Map(); // settings id -> a store shared by every limiter with those settings
const chains = []; // every chain built here, with its parts, for storeStats()

function isPlainObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function normalizeBindings(bindings, kind) {
  if (bindings === undefined) return DEFAULT_BINDINGS;
  if (!isPlainObject(bindings)) throw new SluiceConfigError("bindings", `must be an object { durable?, kv? }; got ${describe(bindings)}`);
  for (const [name, value] of Object.entries(bindings)) {
    if (!Object.hasOwn(DEFAULT_BINDINGS, name)) throw new SluiceConfigError(`bindings.${name}`, "is not a binding sluice uses (known: durable, kv)");
    if (name === "durable" && kind === "kv") throw new SluiceConfigError("bindings.durable", "applies to store 'durable', not 'kv'");
    if (typeof value !== "string" || value === "") {
      throw new SluiceConfigError(`bindings.${name}`, `must be the name of a binding in env; got ${describe(value)}`);
    }
  }
  return Object.freeze({ ...DEFAULT_BINDINGS, ...bindings });
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
  if (kind === "kv" && options.shards !== undefined) throw new SluiceConfigError("shards", "applies to store 'durable', not 'kv'");
  if (kind === "kv" && options.lease !== undefined) throw new SluiceConfigError("lease", "applies to store 'durable', not 'kv'");
  const lease = kind === "durable" ? checkLeaseOptions(options.lease) : null;
  const {
    shards = 1,
    failMode = DEFAULT_FAIL_MODE,
    timeoutMs = DEFAULT_TIMEOUT_MS,
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
    timeoutMs,
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
    lease === null
      ? null
      : shared(`leased|${bindings.durable}|${shards}|${JSON.stringify(lease)}`, () => createLeasedStore({ durable, ...lease }));
  const usesKv = kind === "kv" || fallback.includes("kv");
  const kv = usesKv ? shared(`kv|${bindings.kv}|${logIntervalMs}`, () => createKvStore({ binding: bindings.kv, logIntervalMs })) : null;
  const chain = createFallbackChain({
    primary: leased ?? durable ?? kv,
    kv: durable !== null ? kv : null,
    memory: fallback.includes("memory") ? resolveMemory() : null,
    failMode,
    timeoutMs,
    breaker,
    preFilter,
    logIntervalMs,
  });
  built.set(id, chain);
  chains.push({ settings: Object.freeze(settings), chain, durable, leased, kv });
  return chain;
}

function resolveMemory() {
  return (memoryStore ??= createMemoryStore());
}

/**
 * resolveStore turns the store options ({ store, bindings, shards, lease, fallback, failMode, timeoutMs,
 * breaker, preFilter, logIntervalMs }) into a store, or throws a SluiceConfigError naming the option.
 */
export function resolveStore(options = {}) {
  const { store = "memory" } = options;
  if (store === "durable" || store === "kv") return remoteStore(store, options);
  const isObject = store !== null && typeof store === "object" && typeof store.decide === "function";
  if (store !== "memory" && !isObject) {
    throw new SluiceConfigError("store", `must be 'memory', 'durable', 'kv' or a store object with decide(); got ${describe(store)}`);
  }
  for (const field of REMOTE_FIELDS) {
    if (options[field] !== undefined) {
      const which = isObject ? "a store object (configure it where you build it)" : "'memory'";
      throw new SluiceConfigError(field, `applies to store 'durable' and 'kv'; this limiter's store is ${which}`);
    }
  }
  return isObject ? store : resolveMemory();
}

/**
 * storeStats reports, for every durable or KV chain this isolate built, its settings and counters:
 * decisions per store, fallbacks, pre-filtered denials, errors and timeouts per store, and those of
 * its Durable Object client, its leases (`leases`, null without) and KV store.
 */
export function storeStats() {
  return chains.map(({ settings, chain, durable, leased, kv }) => ({
    ...settings,
    counters: structuredClone(chain.counters),
    durable: durable === null ? null : { ...durable.counters },
    leases: leased === null ? null : { ...leased.counters },
    kv: kv === null ? null : { ...kv.counters },
  }));
}
