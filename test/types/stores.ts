// The stores as README.md composes them: the factories from `sluice`, a store of one's own on the
// store contract, a limiter on a store object, and the isolate's and the chains' statistics.
import {
  createDurableStore,
  createFallbackChain,
  createKvStore,
  createLimiter,
  createMemoryStore,
  createRedisStore,
  ip,
  isolateStats,
  storeStats,
  type AlgorithmName,
  type DurableStore,
  type FallbackChain,
  type IsolateStats,
  type KvStore,
  type NormalizedRule,
  type Outcome,
  type RedisStore,
  type Store,
  type StoreCheck,
  type StoreOptions,
  type StoreStats,
} from "sluice";
import type { SluiceDurableObject } from "sluice/durable-object";
import type { Equal, Expect } from "./assert.js";

interface Env {
  SLUICE_DO: DurableObjectNamespace<SluiceDurableObject>;
  SLUICE_KV: KVNamespace;
}
declare const env: Env;
declare const ctx: ExecutionContext;
declare const rule: NormalizedRule;

// By binding name, looked up in options.env per call, or the binding itself.
const durable: DurableStore = createDurableStore({ binding: "SLUICE_DO", shards: 8 });
const durableByKey = createDurableStore({ binding: env.SLUICE_DO, shards: "key", name: "checkout", timeoutMs: 40 });
const kv: KvStore = createKvStore({ binding: "SLUICE_KV" });
const kvTuned = createKvStore({
  binding: env.SLUICE_KV,
  prefix: "rl:",
  readIntervalMs: 500,
  flushIntervalMs: 2_000,
  maxBuckets: 1_000,
  log: (line) => console.warn(line),
  logIntervalMs: 10_000,
});
const memory = createMemoryStore();
const store: FallbackChain = createFallbackChain({ primary: durable, kv, memory, failMode: "closed", timeoutMs: 50 });
const tuned = createFallbackChain({
  primary: kvTuned,
  memory,
  failClosedRetryAfterMs: 2_000,
  breaker: { failures: 3, cooldownMs: 5_000 },
  preFilter: true,
  preFilterMaxKeys: 5_000,
  log: console.warn,
  logIntervalMs: 1_000,
});

async function decideByHand(): Promise<void> {
  const checks: StoreCheck[] = [{ rule, key: "ip:192.0.2.1", cost: 1 }];
  const fromObject: Outcome = await durable.decide(checks, { env: { ...env }, ctx });
  const fromKv: Outcome = await kv.decide(checks, { nowMs: Date.now(), env: { ...env }, ctx });
  const fromMemory: Outcome = await memory.decide(checks, { nowMs: Date.now(), peek: true });
  const fromChain = await store.decide(checks, { nowMs: Date.now(), env: { ...env }, ctx });
  const who: "memory" | "durable" | "kv" | "redis" | "none" = fromChain.store;
  const tables = store.isolateTables(rule);
  const owners: string[] = tables.map((table) => table.owner);
  const counted: number = store.counters.decided["durable"] ?? 0;
  const skipped: number = store.counters.circuitSkipped + store.counters.circuitOpened;
  const spread: number = durable.counters.spreadRequests;
  await kv.settle();
  console.log(fromObject, fromKv, fromMemory, who, owners, counted, skipped, spread, durableByKey.isBound(env), kv.counters.writeFailures);
  // @ts-expect-error counters are the store's to count
  durable.counters.undone = 0;
  // @ts-expect-error a check names its rule by the normalized rule, not by its name
  memory.decide([{ rule: "login", key: "k", cost: 1 }], { nowMs: 0 });
  // @ts-expect-error nowMs is a number of milliseconds
  kv.decide(checks, { nowMs: new Date() });
}

// A store of one's own: the contract is decide(checks, options) -> Outcome | Promise<Outcome>.
const allowAll: Store = {
  name: "allow-all",
  decide(checks: readonly StoreCheck[], _options?: StoreOptions): Outcome {
    const admitted = checks.map((check) => ({ allowed: true, limit: check.rule.limit, remaining: check.rule.limit, resetMs: 0, retryAfterMs: 0 }));
    return { ...admitted[0], decidingCheck: 0, checks: admitted, store: "memory" };
  },
};
const custom = createLimiter({ key: ip(), limit: 10, windowSec: 60, store: allowAll });
const chained = createLimiter({ key: ip(), limit: 10, windowSec: 60, store });
const bad: Store = {
  name: "bad",
  // @ts-expect-error an outcome says which store decided, from the contract's names
  decide: () => ({ allowed: true, limit: 1, remaining: 1, resetMs: 0, retryAfterMs: 0, decidingCheck: 0, checks: [], store: "memcached" }),
};

// Statistics.
const isolate: IsolateStats = isolateStats();
for (const table of isolate.rules) {
  if ("unavailable" in table) continue;
  const evictions: number = table.evictions;
  console.log(table.id, evictions);
}
const chains: StoreStats[] = storeStats();
for (const chain of chains) {
  const kind: "durable" | "kv" | "redis" = chain.store;
  const roundTrips: number | undefined = chain.redis?.roundTrips;
  const writes: number | undefined = chain.kv?.writes;
  console.log(kind, writes, roundTrips, chain.counters.fallbacks);
}

// The rule a store is given names its algorithm.
type _algorithm = Expect<Equal<NormalizedRule["algorithm"], AlgorithmName>>;
// @ts-expect-error the factories need their binding
createKvStore({});
// @ts-expect-error a chain needs a primary store
createFallbackChain({ memory });
// @ts-expect-error shards is a number or "key"
createDurableStore({ binding: "SLUICE_DO", shards: "all" });

export { bad, chained, custom, decideByHand, tuned };

// The namespace as `wrangler types` writes it (typed for the class, or for a subclass), or untyped.
declare const untyped: DurableObjectNamespace;
declare const forSubclass: DurableObjectNamespace<import("./durable-object.js").AuditedSluice>;
createDurableStore({ binding: untyped });
createDurableStore({ binding: forSubclass });
// @ts-expect-error the durable store's binding is a Durable Object namespace, not KV
createDurableStore({ binding: env.SLUICE_KV });
// @ts-expect-error and the KV store's a KV namespace
createKvStore({ binding: env.SLUICE_DO });

// The Redis store: URL and token from env by default, or given; its own store in a chain.
const redis: RedisStore = createRedisStore({ urlEnv: "MY_REDIS_URL", tokenEnv: "MY_REDIS_TOKEN", clockToleranceMs: 100 });
const redisChain = createFallbackChain({ primary: redis, memory: createMemoryStore(), failMode: "closed" });
const conflicts: number = redis.counters.conflicts;
// @ts-expect-error the clock tolerance is a number of ms
createRedisStore({ clockToleranceMs: "1s" });
export { conflicts, redisChain };

// The remote stores as imported values (sluice/stores/*): their settings sit beside them, checked as
// the names' are.
import { durableStore } from "sluice/stores/durable";
import { kvStore } from "sluice/stores/kv";
import { redisStore } from "sluice/stores/redis";
createLimiter({ key: ip(), limit: 5, windowSec: 60, store: durableStore, shards: "key", lease: true, timeoutMs: 30 });
createLimiter({ key: ip(), limit: 100, windowSec: 60, store: kvStore, fallback: ["memory"] });
createLimiter({ key: ip(), limit: 10, windowSec: 60, store: redisStore, fallback: ["kv", "memory"] });
// @ts-expect-error shards is the Durable Object's setting, not KV's
createLimiter({ key: ip(), limit: 100, windowSec: 60, store: kvStore, shards: 2 });
// @ts-expect-error lease is the Durable Object's setting, not Redis's
createLimiter({ key: ip(), limit: 10, windowSec: 60, store: redisStore, lease: true });

// A fallback's decision says whether it weakened the primary's limit; storeStats() has the counters.
declare const decided: Outcome;
if (decided.fallback !== undefined) {
  const weakened: boolean = decided.fallback.weakened;
  console.log(weakened);
}
for (const stats of storeStats()) {
  const timeout: number | "adaptive" = stats.timeoutMs;
  const late: number = stats.counters.late.undone + stats.counters.late.unanswered;
  const weakenedByMemory: number | undefined = stats.counters.weakened.memory;
  console.log(timeout, late, weakenedByMemory, stats.roundTrip?.srttMs);
}

// sluice/testing: a region's seams over a namespace and a fetch.
import { createRegion } from "sluice/testing";
const far = createRegion({ name: "syd", rttMs: 250, jitter: 0.2, seed: 7, faults: { lostOut: 0.01 } });
const farNamespace: typeof env.SLUICE_DO = far.namespace(env.SLUICE_DO);
const farFetch: typeof fetch = far.fetch(fetch);
far.script("late", "ok");
far.cutOff(30_000, { failFast: true });
console.log(farNamespace, farFetch, far.stats.lostOut);
