import type { AlgorithmName } from "../../wasm-bindings/sluice.js";
import type { KeySource } from "./keys.js";
import type { LimiterStoreOptions } from "./stores/registry.js";

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
  /** The window in seconds (whole milliseconds). */
  windowSec?: number;
  /** Or the window in milliseconds, instead of windowSec. */
  windowMs?: number;
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

export interface CommonOptions<Args extends unknown[]> extends RuleOptions<Args>, LimiterStoreOptions {
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
  /** The environment variable that switches limiting off; default { variable: "ENV", value: "dev" }; false: never. */
  bypass?: false | { variable?: string; value?: string };
  /** Milliseconds since the epoch; default the wall clock. For tests. */
  clock?: () => number;
}
