// The store contract: what every store (memory, Durable Object, KV, a fallback chain, one of your own)
// implements. The host calls decide() once per request with every check of the request.
import type { AlgorithmName, Decision } from "../../../wasm-bindings/sluice.js";

/**
 * A rule as options.js normalizes it. `id` is `${name}|${algorithm}|${limit}|${windowMs}|${burst}`:
 * stable across isolates and Durable Objects, so every store files a rule's counters under it.
 */
export interface NormalizedRule {
  readonly id: string;
  readonly name: string;
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly windowMs: number;
  /** Bucket capacity for token-bucket, leaky-bucket and gcra; 0 means `limit`. */
  readonly burst: number;
  readonly keyCapacity: number;
  /** sliding-counter only: denied requests count too (absent when false). */
  readonly countDenied?: boolean;
}

/** One (rule, key, cost) of a request. */
export interface StoreCheck {
  rule: NormalizedRule;
  /** At most 512 UTF-8 bytes (longer keys were hashed). */
  key: string;
  /** A whole number from 1 to 2^31. */
  cost: number;
}

/** The parts of the Workers ExecutionContext a store uses. */
export interface WaitUntilContext {
  waitUntil(promise: Promise<unknown>): void;
}

export interface StoreOptions {
  /** The isolate's clock (ms since the epoch). The memory, KV and chain stores need it; a Durable Object keeps its own. */
  nowMs?: number;
  /** Decide without charging. */
  peek?: boolean;
  /** The Worker's env, where bindings given by name are looked up. */
  env?: object;
  /** The request's context: background writes are handed to ctx.waitUntil. */
  ctx?: WaitUntilContext;
}

/** The options of a store that decides on the isolate's clock (memory, KV, a fallback chain): nowMs is required. */
export interface TimedStoreOptions extends StoreOptions {
  nowMs: number;
}

export type StoreName = "memory" | "durable" | "kv";

/** The answer to one call: the deciding check's decision, every check's own, and who decided. */
export interface Outcome extends Decision {
  /** Index of the check whose decision this is. */
  decidingCheck: number;
  /**
   * One decision per check, in order; null for a check no store consulted: in a pre-filtered outcome
   * every check but the deciding one, and every check when failMode decided (store "none").
   */
  checks: Array<Decision | null>;
  /** Which store decided; "none" when no store could and the chain's failMode did. */
  store: StoreName | "none";
  /** Present when the store that should have decided failed: which one, and why. */
  fallback?: { from: "durable" | "kv"; reason: string };
  /** True when the chain answered from its memory of an earlier denial, without asking the store. */
  preFiltered?: true;
}

/** A key table a store keeps in the isolate, as the isolate's memory budget counts it. */
export interface IsolateTable {
  /** Which instance holds it: "memory" (the isolate's own), or a KV store's view instance. */
  owner: string;
  ruleId: string;
  algorithm: AlgorithmName;
  limit: number;
  keyCapacity: number;
}

export interface Store {
  readonly name: string;
  decide(checks: readonly StoreCheck[], options?: StoreOptions): Outcome | Promise<Outcome>;
  /** The key tables this store may keep in the isolate for `rule`; none if absent. */
  isolateTables?(rule: NormalizedRule): IsolateTable[];
  /** False when `env` lacks the binding the store needs (a fallback chain then skips it). */
  isBound?(env: unknown): boolean;
}
