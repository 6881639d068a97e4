// Types of chain.js: the fallback chain over the Durable Object, KV and memory stores.
import type { BreakerOptions } from "./breaker.js";
import type { IsolateTable, NormalizedRule, Outcome, Store, StoreCheck, TimedStoreOptions } from "./store.js";

export interface FallbackChainOptions {
  /** The store that should decide (normally the Durable Object store). */
  primary: Store;
  /** Decides when the primary cannot. */
  kv?: Store | null;
  /** The isolate's store, tried after kv; leave it out to go straight to failMode. A fallback whose
   * binding env lacks (isBound(env) false) is passed over. */
  memory?: Store | null;
  /** "open" admits and "closed" denies when no store answers. Default "open". */
  failMode?: "open" | "closed";
  /** How long each store may take before the next is asked. Default 50. */
  timeoutMs?: number;
  /** After `failures` primary failures in a row, skip the primary for `cooldownMs`, then let one
   * request probe it. Default { failures: 5, cooldownMs: 10000 }; false turns it off. */
  breaker?: BreakerOptions | boolean;
  /** retryAfterMs of a fail-closed denial. Default 1000. */
  failClosedRetryAfterMs?: number;
  /** Deny keys the primary denied from this isolate until their retry time. Default true. */
  preFilter?: boolean;
  /** The most denied keys remembered. Default 10000. */
  preFilterMaxKeys?: number;
  /** Where fallbacks are reported. Default console.warn. */
  log?: (line: string) => void;
  /** Fallbacks are logged at most once per interval. Default 60000. */
  logIntervalMs?: number;
}

export interface FallbackChainCounters {
  /** Decisions per store that took them; "failMode" when none could. */
  decided: Record<string, number>;
  /** Decisions the primary did not take because it failed. */
  fallbacks: number;
  /** Denials answered from the isolate's memory of earlier denials. */
  preFiltered: number;
  /** Per store: calls that threw or rejected. */
  errors: Record<string, number>;
  /** Per store: calls that did not answer within timeoutMs. */
  timeouts: Record<string, number>;
  /** Times a store's circuit breaker opened (every store of the chain has one). */
  circuitOpened: number;
  /** Times a store was skipped because its breaker was open. */
  circuitSkipped: number;
  /** The same two, per store name. */
  circuitOpenedBy: Record<string, number>;
  circuitSkippedBy: Record<string, number>;
}

export interface FallbackChain extends Store {
  readonly name: "chain";
  readonly counters: Readonly<FallbackChainCounters>;
  /** Decides at options.nowMs, the isolate's clock (the primary may keep its own). */
  decide(checks: readonly StoreCheck[], options: TimedStoreOptions): Outcome | Promise<Outcome>;
  /** The tables its stores keep in the isolate for `rule`. */
  isolateTables(rule: NormalizedRule): IsolateTable[];
}

/** "open". */
export declare const DEFAULT_FAIL_MODE: "open";
/** 50. */
export declare const DEFAULT_TIMEOUT_MS: number;

export declare function createFallbackChain(options: FallbackChainOptions): FallbackChain;
