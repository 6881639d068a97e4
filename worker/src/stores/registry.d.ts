import type { FallbackChainCounters } from "./chain.js";
import type { DurableStoreCounters } from "./durable.js";
import type { KvStoreCounters } from "./kv.js";
import type { Store } from "./store.js";

export type StoreOption = "memory" | "durable" | "kv" | Store;

/** The options that choose and tune the store (see CommonOptions in options.d.ts). */
export interface StoreOptionsOfLimiter {
  store?: StoreOption;
  bindings?: { durable?: string; kv?: string };
  shards?: number | "key";
  fallback?: ReadonlyArray<"kv" | "memory">;
  failMode?: "open" | "closed";
  timeoutMs?: number;
  preFilter?: boolean;
  logIntervalMs?: number;
}

export declare const STORE_FIELDS: readonly string[];
/** { durable: "SLUICE_DO", kv: "SLUICE_KV" }: the names wrangler.toml declares. */
export declare const DEFAULT_BINDINGS: Readonly<{ durable: string; kv: string }>;
/** 50 ms. */
export declare const DEFAULT_TIMEOUT_MS: number;
export declare const DEFAULT_LOG_INTERVAL_MS: number;
/** durable: ["kv", "memory"]; kv: ["memory"]. */
export declare const DEFAULT_FALLBACK: Readonly<{ durable: readonly ["kv", "memory"]; kv: readonly ["memory"] }>;

/** Turns the store options into a store; throws SluiceConfigError naming the option. */
export declare function resolveStore(options?: StoreOptionsOfLimiter): Store;

/** The settings and counters of one durable or KV chain built in this isolate. */
export interface StoreStats {
  store: "durable" | "kv";
  bindings: { durable?: string; kv: string };
  /** Durable only. */
  shards?: number | "key";
  fallback: ReadonlyArray<"kv" | "memory">;
  failMode: "open" | "closed";
  timeoutMs: number;
  preFilter: boolean;
  logIntervalMs: number;
  /** Decisions per store ("failMode" when none could), fallbacks, pre-filtered denials, errors and timeouts per store. */
  counters: FallbackChainCounters;
  /** The Durable Object client's counters (requests spread over objects, undone charges), or null. */
  durable: DurableStoreCounters | null;
  /** The KV store's counters (reads, writes, failures), or null when the chain has no KV. */
  kv: KvStoreCounters | null;
}

/** storeStats reports every durable or KV chain this isolate built, with its counters. */
export declare function storeStats(): StoreStats[];
