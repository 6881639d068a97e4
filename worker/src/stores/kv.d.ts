// Types of kv.js: the approximate global store over Workers KV.
import type { IsolateTable, NormalizedRule, Outcome, Store, StoreCheck, TimedStoreOptions } from "./store.js";

export interface KvStoreOptions {
  /** The KV namespace, or its binding name in env. */
  binding: KVNamespace | string;
  /** Prepended to every KV key. Default "sluice:". */
  prefix?: string;
  /** How stale an isolate's view of a bucket may get before it reads KV again. Default 1000. */
  readIntervalMs?: number;
  /** The least time between two writes of one bucket by one isolate. Default 1000. */
  flushIntervalMs?: number;
  /** How many buckets an isolate remembers; idle ones are dropped beyond it. Default 10000. */
  maxBuckets?: number;
  /** Where failed flushes are reported. Default console.warn. */
  log?: (line: string) => void;
  /** Failed flushes are logged at most once per interval. Default 60000. */
  logIntervalMs?: number;
}

export interface KvStoreCounters {
  reads: number;
  writes: number;
  readFailures: number;
  writeFailures: number;
  /** KV values the core refused (another format or rule): counted from zero instead. */
  unreadableValues: number;
}

export interface KvStore extends Store {
  readonly name: "kv";
  readonly counters: Readonly<KvStoreCounters>;
  /** Decides at options.nowMs; pass options.ctx so that flushes outlive the response. */
  decide(checks: readonly StoreCheck[], options: TimedStoreOptions): Outcome | Promise<Outcome>;
  /** Resolves when every flush already running has finished. */
  settle(): Promise<void>;
  /** The view table this store keeps in the isolate for `rule` (fixed-window, keyCapacity + 1 keys). */
  isolateTables(rule: NormalizedRule): IsolateTable[];
  /** Whether env has the KV namespace. */
  isBound(env: unknown): boolean;
}

export declare function createKvStore(options: KvStoreOptions): KvStore;

/** A bucket's time to live in KV, in seconds: two windows, at least 60. */
export declare function ttlSeconds(windowMs: number): number;
