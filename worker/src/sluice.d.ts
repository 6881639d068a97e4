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

// The concurrency limit (worker/src/concurrency/, documented in docs/concurrency.md and in its JSDoc).
import type { KeySource } from "./keys.js";
/** What a concurrency limit decided for one request. */
export interface ConcurrencyDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetMs: number;
  retryAfterMs: number;
  store: "memory" | "durable" | "none";
  key?: string;
}
/** The options of concurrency() and createConcurrencyLimiter(); key, cost and skip functions receive `Args`. */
export interface ConcurrencyOptions<Args extends unknown[] = any[], Limited = (...args: any[]) => Response | undefined | Promise<Response | undefined>> {
  key: KeySource<Args>;
  max: number;
  leaseSec?: number;
  cost?: number | ((...args: Args) => number | Promise<number>);
  name?: string;
  keyCapacity?: number;
  store?: "memory" | "durable";
  binding?: string | DurableObjectNamespace;
  timeoutMs?: number;
  fallback?: boolean;
  failMode?: "open" | "closed";
  status?: number;
  code?: string;
  retryAfterSec?: number;
  renewEverySec?: number;
  clock?: () => number;
  skip?: (...args: Args) => boolean | Promise<boolean>;
  onLimited?: Limited;
  /** Limits the client's messages on a held WebSocket (createMessageLimiter). */
  messages?: MessageLimiter;
}
/** A plain fetch handler's concurrency limit. */
export interface ConcurrencyLimiter {
  handle(request: Request, env: unknown, ctx: ExecutionContext | undefined, handler: (request: Request, env: any, ctx: any) => Response | Promise<Response>): Promise<Response>;
  acquire(request: Request, env: unknown, ctx?: ExecutionContext): Promise<{ allowed: boolean; skipped: boolean; decision?: ConcurrencyDecision; lease?: { release(): Promise<void> } }>;
  hold(response: Response, lease: { release(): Promise<void> }): Response;
  limitedResponse(decision: ConcurrencyDecision): Response;
  readonly counters: Record<string, number>;
}
export declare function createConcurrencyLimiter(
  options: ConcurrencyOptions<[request: Request, env: any, ctx: ExecutionContext | undefined], (request: Request, decision: ConcurrencyDecision) => Response | undefined | Promise<Response | undefined>>,
): ConcurrencyLimiter;

// Message limits on open WebSockets (worker/src/websocket/message-limit.js; docs/concurrency.md, "WebSockets").
export interface MessageRule {
  limit: number;
  windowSec?: number;
  windowMs?: number;
  algorithm?: "fixed-window" | "sliding-log" | "sliding-counter" | "token-bucket" | "leaky-bucket" | "gcra";
  keyCapacity?: number;
}
export interface MessageLimitOptions {
  name?: string;
  perConnection?: MessageRule;
  perKey?: MessageRule;
  onLimited?: "error" | "close";
  closeAfter?: number;
  closeCode?: number;
  closeReason?: string;
  errorFrame?: (decision: { retryAfterMs: number; limit: number; remaining: number }) => string;
  clock?: () => number;
}
/** What a gate keeps in a hibernatable WebSocket's attachment. */
export interface GateSnapshot {
  id: string;
  violations: number;
  connectionState: Uint8Array | null;
}
/** Something a gate can answer: a WebSocket, or Hono's WSContext. */
export interface MessageSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
}
export interface MessageGate {
  readonly id: string;
  readonly key: string;
  readonly violations: number;
  admit(socket: MessageSocket): boolean;
  snapshot(): GateSnapshot;
}
export interface MessageLimiter {
  connection(key: string, snapshot?: GateSnapshot): MessageGate;
  readonly counters: { admitted: number; dropped: number; closed: number };
}
export declare function createMessageLimiter(options: MessageLimitOptions): MessageLimiter;
export declare function limitMessages<Events extends { onMessage?: (event: any, ws: any) => unknown }>(gate: MessageGate, events: Events): Events;
