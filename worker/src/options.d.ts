import type { AlgorithmName } from "../../wasm-bindings/sluice.js";
import type { KeySource } from "./keys.js";
import type { LimiterStoreOptions } from "./stores/registry.js";

export type HeaderMode = "legacy" | "draft" | "both" | "none";

/** What a rule may set besides its quota and key. `Args` are what key and cost functions receive. */
export interface RuleFields<Args extends unknown[]> {
  /** The policy's name in headers and its counters' id; default "<limit>-per-<window>s". Rules with the same
   * name, algorithm, limit, window and burst share counters. */
  name?: string;
  /** Default "sliding-counter". */
  algorithm?: AlgorithmName;
  /** Bucket capacity (token-bucket, leaky-bucket, gcra); default limit, or ceil(rate) with `rate`. */
  burst?: number;
  /** What a request costs; default 1. A function's fractions round up. */
  cost?: number | ((...args: Args) => number | Promise<number>);
  /** Keys the rule's table holds before evicting the least used; default 50,000 (fewer for big sliding logs). */
  keyCapacity?: number;
  /** sliding-counter only: denied requests count too (Cloudflare's counter); not with store "kv". Default false. */
  countDenied?: boolean;
}

/**
 * A rule's quota: `limit` requests per window, the window given as exactly one of windowSec and
 * windowMs; or, for the buckets, `rate` requests per second instead of all three.
 */
export type RuleQuota =
  | {
      /** Requests per window (windows), or sustained requests per window (buckets). */
      limit: number;
      /** The window in seconds (whole milliseconds). */
      windowSec: number;
      windowMs?: undefined;
      rate?: undefined;
    }
  | {
      limit: number;
      /** The window in milliseconds. */
      windowMs: number;
      windowSec?: undefined;
      rate?: undefined;
    }
  | {
      /** Buckets only (token-bucket, leaky-bucket, gcra): sustained requests per second, up to 3 decimals. */
      rate: number;
      limit?: undefined;
      windowSec?: undefined;
      windowMs?: undefined;
    };

/** A rule's key: required, in the rule or (with `rules`) at the top level. */
export interface RuleKey<Args extends unknown[]> {
  key: KeySource<Args>;
}

/** One rule of `rules`: its quota, its other fields and its key, unless the top level gives it. */
export type RuleOptions<Args extends unknown[] = any[]> = RuleFields<Args> & RuleQuota & Partial<RuleKey<Args>>;

/** The options that shape responses and decide who is limited, whatever the rules. */
export interface ResponseOptions<Args extends unknown[]> {
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

/** The fields a rule of `rules` takes from the top level when it leaves them out. */
type Inherited<Args extends unknown[]> = Pick<RuleFields<Args>, "algorithm" | "cost" | "keyCapacity">;
/** Beside `rules`, the fields only a rule has are refused (give them inside each rule). */
type OwnedByRules = { [Field in "name" | "burst" | "limit" | "windowSec" | "windowMs" | "rate"]?: undefined };

/** The rules of a limiter: one rule at the top level, or 1 to 16 in `rules`; every rule has a key. */
export type RulesOptions<Args extends unknown[]> =
  | (RuleFields<Args> & RuleQuota & RuleKey<Args> & { rules?: undefined })
  | (Inherited<Args> &
      OwnedByRules &
      (
        | (RuleKey<Args> & {
            /** Several rules checked in one all-or-nothing call (1 to 16); they inherit key, algorithm, cost, keyCapacity. */
            rules: ReadonlyArray<RuleOptions<Args>>;
          })
        | { key?: undefined; rules: ReadonlyArray<RuleFields<Args> & RuleQuota & RuleKey<Args>> }
      ));

/** The options of a limiter or middleware: its rules, its responses and its store. */
export type CommonOptions<Args extends unknown[]> = ResponseOptions<Args> & LimiterStoreOptions & RulesOptions<Args>;
