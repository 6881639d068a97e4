// sluice: rate limiting for Cloudflare Workers. The framework-free entry; the Hono middleware is sluice/hono.
export { createLimiter } from "./limiter.js";
export type { BypassedDecision, CheckedDecision, Limiter, LimiterOptions, NothingCounted, RateLimitDecision, SkippedDecision } from "./limiter.js";
export { apiKey, compose, firstOf, ip, route, user } from "./keys.js";
export type { IpOptions, KeyFunction, KeyHelper, KeyInput, KeyPart, KeySource } from "./keys.js";
export { isolateStats } from "./isolate.js";
export type { IsolateStats } from "./isolate.js";
export { storeStats } from "./stores/registry.js";
export type { StoreStats } from "./stores/registry.js";
export { createMemoryStore } from "./stores/memory.js";
export type { MemoryStore } from "./stores/memory.js";
export { createDurableStore } from "./stores/durable.js";
export type { DurableStore, DurableStoreOptions } from "./stores/durable.js";
export { createKvStore } from "./stores/kv.js";
export type { KvStore, KvStoreOptions } from "./stores/kv.js";
// The Redis store's types are declared here (redis.js carries the same in JSDoc; no new .d.ts file).
/** The options of createRedisStore (docs/redis.md). */
export interface RedisStoreOptions {
  /** The REST URL; default: read from env[urlEnv] at first use. */
  url?: string;
  /** The REST token; default: read from env[tokenEnv] at first use. */
  token?: string;
  /** The env variable holding the URL; default "UPSTASH_REDIS_REST_URL". */
  urlEnv?: string;
  /** The env variable holding the token; default "UPSTASH_REDIS_REST_TOKEN". */
  tokenEnv?: string;
  /** Prepended to every Redis key; default "sluice:". */
  prefix?: string;
  /** How far a decision's time may be from Redis's TIME; default 250 ms. */
  clockToleranceMs?: number;
  /** Script calls per decision before giving up; default 16. */
  maxAttempts?: number;
  /** How many keys' last states the isolate remembers; default 10000. */
  maxCachedKeys?: number;
  /** Abort a decision (and its HTTP request) after this long; default Infinity. */
  timeoutMs?: number;
  /** The fetch function; default globalThis.fetch. */
  fetch?: typeof fetch;
  /** This isolate's clock (ms since the epoch); default the wall clock. */
  clock?: () => number;
}
/** The Redis store's counters. */
export interface RedisStoreCounters {
  decisions: number;
  roundTrips: number;
  conflicts: number;
  clockRefusals: number;
  exhausted: number;
}
/** A store deciding exactly in Redis over the Upstash REST protocol. */
export interface RedisStore extends Store {
  readonly name: "redis";
  readonly counters: Readonly<RedisStoreCounters>;
  decide(checks: readonly StoreCheck[], options?: StoreOptions): Promise<Outcome>;
}
/** createRedisStore returns a store keeping each key's state in Redis, decided by the core, set by compare-and-set. */
export declare function createRedisStore(options?: RedisStoreOptions): RedisStore;
export { createFallbackChain } from "./stores/chain.js";
export type { FallbackChain, FallbackChainOptions } from "./stores/chain.js";
export { SluiceConfigError } from "./errors.js";
export type { CommonOptions, HeaderMode, RuleOptions, RuleQuota } from "./options.js";
export type { DurableStoreSettings, KvStoreSettings, LimiterStoreOptions, RedisStoreSettings, StoreOption } from "./stores/registry.js";
export type { IsolateTable, NormalizedRule, Outcome, Store, StoreCheck, StoreOptions, TimedStoreOptions } from "./stores/store.js";
import type { Outcome, Store, StoreCheck, StoreOptions } from "./stores/store.js";
export type { AlgorithmName, Decision } from "../../wasm-bindings/sluice.js";
