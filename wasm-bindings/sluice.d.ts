// Types of wasm-bindings/sluice.js, the loader of sluice.wasm.

export declare const ABI_VERSION: 3;
export declare const MAX_KEY_BYTES: 512;
export declare const MAX_CHECKS_PER_CALL: 16;

export type AlgorithmName =
  | "fixed-window"
  | "sliding-log"
  | "sliding-counter"
  | "token-bucket"
  | "leaky-bucket"
  | "gcra";
export declare const ALGORITHMS: readonly AlgorithmName[];

export declare const Status: Readonly<{
  OK: 0;
  KEY_TOO_LONG: 1;
  INVALID_RULE: 2;
  INVALID_COST: 3;
  UNKNOWN_RULE: 4;
  TOO_MANY_CHECKS: 5;
  OUT_OF_MEMORY: 6;
  INVALID_STATE: 7;
  NOT_FOUND: 8;
  BUFFER_TOO_SMALL: 9;
  INVALID_ARGUMENT: 10;
}>;
export type StatusCode = (typeof Status)[keyof typeof Status];

/** A call the core refused: a programming or configuration error, never a limit. */
export declare class SluiceError extends Error {
  readonly name: "SluiceError";
  readonly status: StatusCode;
  readonly statusName: string;
  /** The option at fault, when there is one ("limit", "windowMs", "burst", "algorithm", "keyCapacity", "rule", "key", "cost"). */
  readonly field?: string;
}

export interface RuleSpec {
  algorithm: AlgorithmName;
  /** Window quota, or sustained tokens per window for the buckets and GCRA. */
  limit: number;
  windowMs: number;
  /** Bucket capacity for token-bucket, leaky-bucket and gcra; 0 or absent means `limit`. */
  burst?: number;
  /** How many keys the rule's table holds before it evicts the least used. */
  keyCapacity: number;
  /** sliding-counter only: denied requests count too (Cloudflare's semantics). Default false. */
  countDenied?: boolean;
}

/** One rule's answer for one key. Times are milliseconds from `nowMs`. */
export interface Decision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Until the key is back to its full quota (or, for the fixed window, the window turns). */
  resetMs: number;
  /** Until this same request would be admitted; 0 when admitted; Infinity when never. */
  retryAfterMs: number;
}

export interface CheckSpec {
  rule: number;
  key: string | Uint8Array;
  /** A whole number >= 1; default 1. */
  cost?: number;
}

export interface Outcome extends Decision {
  /** Index of the check whose decision this is (the denying one, or the one with least remaining). */
  decidingCheck: number;
  checks: Decision[];
}

export interface TableStats {
  keys: number;
  slots: number;
  memoryBytes: number;
  evictions: number;
  /** Evictions of keys that still owed quota (folded into the eviction summary): above 0, the table is too small. */
  evictionsRestricting: number;
  /** Charged requests of keys not in the table that started from the eviction summary. */
  summaryStarts: number;
  summaryBytes: number;
}

export interface CoreOptions {
  /** The key table's hash secret; random when absent. */
  seed?: Uint32Array;
}

export declare class SluiceCore {
  static instantiate(module: WebAssembly.Module, options?: CoreOptions): SluiceCore;
  static fromBytes(bytes: BufferSource, options?: CoreOptions): Promise<SluiceCore>;
  addRule(rule: RuleSpec): number;
  readonly ruleCount: number;
  check(rule: number, key: string | Uint8Array, cost: number, nowMs: number): Decision;
  peek(rule: number, key: string | Uint8Array, cost: number, nowMs: number): Decision;
  checkAll(checks: readonly CheckSpec[], nowMs: number, options?: { peek?: boolean }): Outcome;
  reset(rule: number, key: string | Uint8Array): void;
  exportState(rule: number, key: string | Uint8Array): Uint8Array | null;
  importState(rule: number, key: string | Uint8Array, state: Uint8Array): void;
  stats(rule: number): TableStats;
  readonly memoryBytes: number;
}
