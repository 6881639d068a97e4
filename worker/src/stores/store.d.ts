// The store contract: what every store (memory, Durable Object, KV, a fallback chain) implements.
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
}

export interface StoreCheck {
  rule: NormalizedRule;
  /** At most 512 UTF-8 bytes (longer keys were hashed). */
  key: string;
  /** A whole number from 1 to 2^31. */
  cost: number;
}

export interface StoreOptions {
  /** The memory store decides at this instant; a Durable Object uses its own clock. */
  nowMs?: number;
  /** Decide without charging. */
  peek?: boolean;
  env?: unknown;
  ctx?: unknown;
}

export type StoreKind = "memory" | "durable" | "kv";

/** The answer to one call: the deciding check's decision, every check's own, and who decided. */
export interface Outcome extends Decision {
  decidingCheck: number;
  checks: Decision[];
  store: StoreKind;
  /** Present when a fallback store decided because the configured one failed. */
  fallback?: { from: "durable" | "kv"; reason: string };
}

export interface Store {
  decide(checks: StoreCheck[], options: StoreOptions): Outcome | Promise<Outcome>;
}
