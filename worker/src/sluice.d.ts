// sluice: rate limiting for Cloudflare Workers. The framework-free entry; the Hono middleware is sluice/hono.
export { createLimiter } from "./limiter.js";
export type { BypassedDecision, CheckedDecision, Limiter, LimiterOptions, NothingCounted, RateLimitDecision, SkippedDecision } from "./limiter.js";
export { apiKey, compose, firstOf, ip, route, user } from "./keys.js";
export type { IpOptions, KeyFunction, KeyHelper, KeyInput, KeyPart, KeySource } from "./keys.js";
export { isolateStats } from "./isolate.js";
export type { IsolateStats } from "./isolate.js";
export { storeStats } from "./stores/registry.js";
export type { StoreStats } from "./stores/registry.js";
export { createMemoryStore } from "./stores/memory.js";
export type { MemoryStore } from "./stores/memory.js";
export { createDurableStore } from "./stores/durable.js";
export type { DurableStore, DurableStoreOptions } from "./stores/durable.js";
export { createKvStore } from "./stores/kv.js";
export type { KvStore, KvStoreOptions } from "./stores/kv.js";
export { createFallbackChain } from "./stores/chain.js";
export type { FallbackChain, FallbackChainOptions } from "./stores/chain.js";
export { SluiceConfigError } from "./errors.js";
export type { CommonOptions, HeaderMode, RuleOptions, RuleQuota } from "./options.js";
export type { DurableStoreSettings, KvStoreSettings, LimiterStoreOptions, StoreOption } from "./stores/registry.js";
export type { IsolateTable, NormalizedRule, Outcome, Store, StoreCheck, StoreOptions, TimedStoreOptions } from "./stores/store.js";
export type { AlgorithmName, Decision } from "../../wasm-bindings/sluice.js";

// Account lockout (worker/src/lockout.js, docs/lockout.md). Declared here, minimally, until the
// declarations are generated from the JSDoc of the .js sources.
import type { KeyFunction, KeyHelper, KeyInput, KeySource } from "./keys.js";
import type { DurableStoreSettings } from "./stores/registry.js";
import type { Store } from "./stores/store.js";

/** The options of lockout() and createLockout(); every one but `key` has a default (docs/lockout.md). */
export interface LockoutOptions<Args extends unknown[] = any[]> extends Omit<DurableStoreSettings, "fallback"> {
  /** The account: a key function such as jsonField("username"). */
  key: KeySource<Args>;
  /** The client, counted with the account; default ip(); false counts per account only. */
  client?: KeyFunction<Args> | KeyHelper | false;
  /** Failures per (account, client) within windowSec that lock it; default 5. */
  maxFailures?: number;
  /** Default 900. */
  windowSec?: number;
  /** How long a lock lasts; default 900. */
  lockSec?: number;
  /** Failures per account from every client; default { maxFailures: 4 * maxFailures }; false for none. */
  account?: { maxFailures?: number; windowSec?: number; lockSec?: number } | false;
  /** Growing locks for repeated lockouts; default false; true for { factor: 2, maxLockSec: 86400, windowSec: 86400 }. */
  backoff?: { factor?: number; maxLockSec?: number; windowSec?: number } | boolean;
  /** Statuses counted as failures; default [401, 403]. */
  failureStatuses?: readonly number[];
  /** Whether a success clears the failures and lockouts; default true. */
  resetOnSuccess?: boolean;
  /** Account normalization; default normalizeAccount; false for none. */
  normalize?: ((name: string) => string) | boolean;
  /** Prefix of the rules' names (counters are shared by name); default "lockout". */
  name?: string;
  keyCapacity?: number;
  /** The locked body's code; default "locked_out". */
  code?: string;
  clock?: () => number;
  /** Default "durable"; "kv" is refused. */
  store?: "durable" | "memory" | Store;
  /** Default ["memory"]. */
  fallback?: readonly [] | readonly ["memory"];
}

/** One login attempt as lockout judged it before the handler. */
export interface LockoutAttempt {
  readonly allowed: boolean;
  readonly reason: "locked" | "missing_account" | null;
  readonly account: string | null;
  readonly retryAfterMs: number;
  readonly store: string | null;
  /** Counts this attempt as failed, whatever its status. */
  fail(): void;
  /** Counts this attempt as a success, whatever its status. */
  succeed(): void;
}

export interface LockoutSettlement {
  outcome: "failure" | "success" | "neutral";
  locked: Array<"client" | "account">;
  counted: boolean;
}

export interface Lockout {
  check(request: Request, env?: unknown, ctx?: unknown): Promise<LockoutAttempt>;
  settle(attempt: LockoutAttempt, response: Response | number): Promise<LockoutSettlement>;
  refusedResponse(attempt: LockoutAttempt): Response;
}

export declare function createLockout(options: LockoutOptions<[request: Request, env: any, ctx: any]>): Lockout;
/** A key function reading the string field `name` of a JSON body (a bounded copy). */
export declare function jsonField(name: string, options?: { maxBytes?: number }): (input: KeyInput) => Promise<string | undefined>;
/** NFKC, trimmed, case folded. */
export declare function normalizeAccount(name: string): string;
