import type { FallbackChainCounters } from "./chain.js";
import type { DurableStoreCounters } from "./durable.js";
import type { KvStoreCounters } from "./kv.js";
import type { Store } from "./store.js";

export type StoreOption = "memory" | "durable" | "kv" | Store;

/** The options of a limiter or middleware that choose and tune its store. */
export interface LimiterStoreOptions {
  /**
   * Where counts live; default "memory" (this isolate's instance). "durable": exact, in a Durable
   * Object, falling back to KV (if bound), then memory, then failMode. "kv": approximate, in Workers
   * KV, falling back to memory, then failMode. Or a store object of your own.
   */
  store?: StoreOption;
  /** durable and kv: the binding names in env; default { durable: "SLUICE_DO", kv: "SLUICE_KV" }. */
  bindings?: { durable?: string; kv?: string };
  /** durable: how many objects share the keys (by a hash of the key), or "key" for one per key; default 1. */
  shards?: number | "key";
  /** durable and kv: who decides, in order, when the store cannot; default ["kv", "memory"] (durable), ["memory"] (kv); [] for none. */
  fallback?: ReadonlyArray<"kv" | "memory">;
  /** durable and kv: "open" admits, "closed" denies (Retry-After 1 s) when no store can answer; default "open". */
  failMode?: "open" | "closed";
  /** durable and kv: how long each store may take before the next decides; default 50 ms. */
  timeoutMs?: number;
  /** durable and kv: deny keys the store denied from this isolate, with no round trip, until their retry time; default true. */
  preFilter?: boolean;
  /** durable and kv: fallbacks and failed KV writes are logged at most once per interval; default 60000. */
  logIntervalMs?: number;
}

export declare const STORE_FIELDS: readonly string[];
/** { durable: "SLUICE_DO", kv: "SLUICE_KV" }: the names wrangler.toml declares. */
export declare const DEFAULT_BINDINGS: Readonly<{ durable: string; kv: string }>;
/** durable: ["kv", "memory"]; kv: ["memory"]. */
export declare const DEFAULT_FALLBACK: Readonly<{ durable: readonly ["kv", "memory"]; kv: readonly ["memory"] }>;

/** Turns the store options into a store; throws SluiceConfigError naming the option. */
export declare function resolveStore(options?: LimiterStoreOptions): Store;

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
