import type { BreakerOptions } from "./breaker.js";
import type { FallbackChainCounters } from "./chain.js";
import type { DurableStoreCounters } from "./durable.js";
import type { KvStoreCounters } from "./kv.js";
import type { Store } from "./store.js";

export type StoreOption = "memory" | "durable" | "kv" | Store;

/** durable and kv: the fallback chain's settings. */
interface ChainSettings {
  /** "open" admits, "closed" denies (Retry-After 1 s) when no store can answer; default "open". */
  failMode?: "open" | "closed";
  /** How long each store may take before the next decides; default 50 ms. */
  timeoutMs?: number;
  /** Skip a failing primary: after `failures` failures in a row, for `cooldownMs`, then probe it with one
   * request; default { failures: 5, cooldownMs: 10000 }; false turns it off. */
  breaker?: BreakerOptions | boolean;
  /** Deny keys the store denied from this isolate, with no round trip, until their retry time; default true. */
  preFilter?: boolean;
  /** Fallbacks and failed KV writes are logged at most once per interval; default 60000. */
  logIntervalMs?: number;
}

/** The settings of store: "durable": a Durable Object, falling back to KV (if bound), then memory, then failMode. */
export interface DurableStoreSettings extends ChainSettings {
  /** The binding names in env; default { durable: "SLUICE_DO", kv: "SLUICE_KV" }. */
  bindings?: { durable?: string; kv?: string };
  /** How many objects share the keys (by a hash of the key), or "key" for one per key; default 1. */
  shards?: number | "key";
  /** Let isolates decide hot keys from quota the object lent them, exactly (docs/leases.md); default off. */
  lease?: boolean | { leaseMs?: number; maxLeaseUnits?: number; maxKeys?: number };
  /** Who decides, in this order, when the object cannot; default ["kv", "memory"]; [] for none. */
  fallback?: readonly [] | readonly ["kv"] | readonly ["memory"] | readonly ["kv", "memory"];
}

/** The settings of store: "kv": Workers KV, falling back to memory, then failMode. */
export interface KvStoreSettings extends ChainSettings {
  /** The KV binding's name in env; default { kv: "SLUICE_KV" }. */
  bindings?: { kv?: string };
  /** Durable only. */
  shards?: undefined;
  /** Durable only. */
  lease?: undefined;
  /** Who decides when KV cannot; default ["memory"]; [] for none. */
  fallback?: readonly [] | readonly ["memory"];
}

/**
 * The options of a limiter or middleware that choose and tune its store. `store` is where counts
 * live; default "memory" (this isolate's instance), which takes no settings, nor does a store object of
 * your own (configure it where you build it). "durable": exact, in a Durable Object; "kv": approximate,
 * in Workers KV; each with its settings.
 */
export type LimiterStoreOptions =
  | ({ store?: "memory" | Store } & { [Setting in keyof DurableStoreSettings]?: undefined })
  | ({ store: "durable" } & DurableStoreSettings)
  | ({ store: "kv" } & KvStoreSettings);

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
  /** The breaker's settings, or false when it is off. */
  breaker: Readonly<Required<BreakerOptions>> | false;
  preFilter: boolean;
  logIntervalMs: number;
  /** Decisions per store ("failMode" when none could), fallbacks, pre-filtered denials, errors and timeouts per store. */
  counters: FallbackChainCounters;
  /** The Durable Object client's counters (requests spread over objects, undone charges), or null. */
  durable: DurableStoreCounters | null;
  /** The KV store's counters (reads, writes, failures), or null when the chain has no KV. */
  kv: KvStoreCounters | null;
  /** Durable with `lease` only: its settings. */
  lease?: { leaseMs: number; maxLeaseUnits: number; maxKeys: number };
  /** The leases' counters (round trips, leased decisions, leases granted, units lent / returned / stranded), or null without `lease`. */
  leases: {
    roundTrips: number;
    leasedDecisions: number;
    leasesGranted: number;
    unitsLent: number;
    leasesExpired: number;
    unitsReturned: number;
    unitsStranded: number;
  } | null;
}

/** storeStats reports every durable or KV chain this isolate built, with its counters. */
export declare function storeStats(): StoreStats[];
