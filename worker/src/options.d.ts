import type { AlgorithmName } from "../../wasm-bindings/sluice.js";
import type { KeySource } from "./keys.js";
import type { StoreOption } from "./stores/registry.js";

export type HeaderMode = "legacy" | "draft" | "both" | "none";

/** One rule. `Args` are what key and cost functions receive. */
export interface RuleOptions<Args extends unknown[]> {
  /** The policy's name in headers and its counters' id; default "<limit>-per-<window>s". Rules with the same
   * name, algorithm, limit, window and burst share counters. */
  name?: string;
  /** Required (here or, with `rules`, at the top level). */
  key?: KeySource<Args>;
  /** Requests per window (windows), or sustained requests per window (buckets). */
  limit?: number;
  windowSec?: number;
  /** Default "sliding-counter". */
  algorithm?: AlgorithmName;
  /** Bucket capacity (token-bucket, leaky-bucket, gcra); default limit, or ceil(rate) with `rate`. */
  burst?: number;
  /** Buckets only, instead of limit and windowSec: sustained requests per second (up to 3 decimals). */
  rate?: number;
  /** What a request costs; default 1. A function's fractions round up. */
  cost?: number | ((...args: Args) => number | Promise<number>);
  /** Keys the rule's table holds before evicting the least used; default 50,000 (fewer for big sliding logs). */
  keyCapacity?: number;
}

export interface CommonOptions<Args extends unknown[]> extends RuleOptions<Args> {
  /** Several rules checked in one all-or-nothing call (1 to 16); they inherit key, algorithm, cost, keyCapacity. */
  rules?: ReadonlyArray<RuleOptions<Args>>;
  /** The body's "code" on a 429; default "rate_limited". */
  code?: string | number;
  /** True lets the request through, unlimited and without headers. */
  skip?: (...args: Args) => boolean | Promise<boolean>;
  /** Default "both". */
  headers?: HeaderMode;
  /** Answer 429s as application/problem+json (quota-exceeded, with violated-policies). Default false. */
  problemJson?: boolean;
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
  /** The environment variable that switches limiting off; default { variable: "ENV", value: "dev" }; false: never. */
  bypass?: false | { variable?: string; value?: string };
  /** Milliseconds since the epoch; default the wall clock. For tests. */
  clock?: () => number;
}
