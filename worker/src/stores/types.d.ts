// The store contract every sluice store implements (see HELPERS-BRIEF / README "Stores").
import type { AlgorithmName, Decision } from "../../../wasm-bindings/sluice.js";

/** A rule as options.js normalizes it; `id` is stable across isolates and Durable Objects. */
export interface NormalizedRule {
  /** `${name}|${algorithm}|${limit}|${windowMs}|${burst}` */
  id: string;
  name: string;
  algorithm: AlgorithmName;
  limit: number;
  windowMs: number;
  burst: number;
  keyCapacity: number;
}

/** One (rule, key, cost) of a request. The key is already safe: at most 512 UTF-8 bytes. */
export interface StoreCheck {
  rule: NormalizedRule;
  key: string;
  cost: number;
}

/** The parts of the Workers ExecutionContext a store uses. */
export interface WaitUntilContext {
  waitUntil(promise: Promise<unknown>): void;
}

export interface StoreOptions {
  /** The isolate's clock (ms since the epoch). The memory, KV and chain stores need it; the Durable Object keeps its own. */
  nowMs?: number;
  /** Decide without charging. */
  peek?: boolean;
  /** The Worker's env, where bindings given by name are looked up. */
  env?: Record<string, unknown>;
  /** The request's context: background writes are handed to ctx.waitUntil. */
  ctx?: WaitUntilContext;
}

export type StoreName = "memory" | "durable" | "kv";

export interface StoreOutcome extends Decision {
  /** Index of the check whose decision this is. */
  decidingCheck: number;
  /**
   * One decision per check, in order. In a pre-filtered outcome (`preFiltered: true`) only the
   * deciding check was consulted: the others are null.
   */
  checks: Array<Decision | null>;
  /** Which store decided; "none" when no store could and the chain's failMode did. */
  store: StoreName | "none";
  /** Present when the store that should have decided failed. */
  fallback?: { from: "durable" | "kv"; reason: string };
  /** True when the chain answered from its memory of an earlier denial, without asking the store. */
  preFiltered?: true;
}

export interface Store {
  readonly name: string;
  decide(checks: readonly StoreCheck[], options?: StoreOptions): StoreOutcome | Promise<StoreOutcome>;
}
