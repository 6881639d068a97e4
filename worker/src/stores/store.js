// The store contract: what every store (memory, Durable Object, KV, a fallback chain, one of your own)
// implements. The host calls decide() once per request with every check of the request. This module
// holds types only: the one place the contract is written down.

/** @import { AlgorithmName, Decision } from "../../../wasm-bindings/sluice.js" */

/**
 * A rule as options.js normalizes it. `id` is `${name}|${algorithm}|${limit}|${windowMs}|${burst}`:
 * stable across isolates and Durable Objects, so every store files a rule's counters under it.
 * @typedef {object} NormalizedRule
 * @property {string} id
 * @property {string} name
 * @property {AlgorithmName} algorithm
 * @property {number} limit
 * @property {number} windowMs
 * @property {number} burst Bucket capacity for token-bucket, leaky-bucket and gcra; 0 means `limit`.
 * @property {number} keyCapacity
 * @property {boolean} [countDenied] sliding-counter only: denied requests count too (absent when false).
 * @property {number} [blockMs] A key that exceeds the rule is blocked this long, or until its quota is whole again (absent: throttles).
 */

/**
 * One (rule, key, cost) of a request.
 * @typedef {object} StoreCheck
 * @property {NormalizedRule} rule
 * @property {string} key At most 512 UTF-8 bytes (longer keys were hashed).
 * @property {number} cost A whole number from 1 to 2^31.
 */

/**
 * The parts of the Workers ExecutionContext a store uses.
 * @typedef {object} WaitUntilContext
 * @property {(promise: Promise<unknown>) => void} waitUntil
 */

/**
 * @typedef {object} StoreOptions
 * @property {number} [nowMs] The isolate's clock (ms since the epoch). The memory, KV and chain stores need it; a Durable Object keeps its own.
 * @property {boolean} [peek] Decide without charging.
 * @property {object} [env] The Worker's env, where bindings given by name are looked up.
 * @property {WaitUntilContext} [ctx] The request's context: background writes are handed to ctx.waitUntil.
 */

/**
 * The options of a store that decides on the isolate's clock (memory, KV, a fallback chain): nowMs is required.
 * @typedef {StoreOptions & { nowMs: number }} TimedStoreOptions
 */

/** @typedef {"memory" | "durable" | "kv" | "redis"} StoreName */

/**
 * The answer to one call: the deciding check's decision, every check's own, and who decided.
 * @typedef {Decision & OutcomeFields} Outcome
 */
/**
 * @typedef {object} OutcomeFields
 * @property {number} decidingCheck Index of the check whose decision this is.
 * @property {Array<Decision | null>} checks One decision per check, in order; null for a check no store consulted: in a
 *   pre-filtered outcome every check but the deciding one, and every check when failMode decided (store "none").
 * @property {StoreName | "none"} store Which store decided; "none" when no store could and the chain's failMode did.
 * @property {{ from: "durable" | "kv" | "redis"; reason: string; weakened: boolean }} [fallback] Present when the store that
 *   should have decided failed: which one, why, and whether the decision is weaker than that store's (taken by a fallback
 *   store, or admitted by failMode "open"; false for a failMode "closed" denial, which over-admits nothing).
 * @property {true} [lease] Present when the isolate decided from quota the Durable Object lent it (store "durable" with `lease`: docs/leases.md).
 * @property {true} [preFiltered] True when the chain answered from its memory of an earlier denial, without asking the store.
 * @property {true} [autoBlocked] True when the limiter refused the key because an auto-blocking rule blocked it (features/auto-block/):
 *   the deciding check's decision is that rule's limit with its block's end; no rule was charged.
 */

/**
 * A key table a store keeps in the isolate, as the isolate's memory budget counts it.
 * @typedef {object} IsolateTable
 * @property {string} owner Which instance holds it: "memory" (the isolate's own), or a KV store's view instance.
 * @property {string} ruleId
 * @property {AlgorithmName} algorithm
 * @property {number} limit
 * @property {number} keyCapacity
 */

/**
 * A store: where a limiter's counts live.
 * - decide(checks, options) decides every check of one request, all-or-nothing (with options.peek,
 *   without charging), and answers an Outcome, or a promise of one.
 * - isolateTables(rule), optional: the key tables this store may keep in the isolate for `rule`; none if absent.
 * - reset(checks, options), optional for stores of your own (every built-in store has it): forgets the
 *   (rule, key) of each check, which is back to its full quota; `cost` is ignored. Takes the same
 *   options as decide (nowMs, env, ctx). The limiter's reset() needs it.
 * - blockList, optional: the deployment's list of auto-blocks (block-list-table.js), kept where the blocks are
 *   (the Durable Object and Redis stores have one; without it, an isolate lists the blocks it saw).
 * - isBound(env), optional: false when `env` lacks the binding the store needs (a fallback chain then skips it).
 * - checkBindings(env), optional: throws a SluiceConfigError naming what `env` lacks for this store to
 *   decide at all (the dev bypass calls it, so a missing binding fails in development as when deployed).
 * - timeoutFor(checks), timedOut(checks, usedMs), takeBack(outcome), optional: a store that measures its round trips
 *   says how long a fallback chain should wait for it (round-trip.js), hears of calls that did not answer in time, and
 *   takes back the charge of an admitted outcome whose request the chain decided otherwise (a late answer).
 * - decideLocally(checks, options) and decideRemotely(checks, options), optional, together: a store
 *   that holds part of the count in the isolate (leases.js) answers from it with no I/O, or null; the
 *   fallback chain asks decideLocally first, before its breaker, and decideRemotely after a miss.
 * - ownDeadline, optional: true when the store bounds each of its calls itself (counted from when the call
 *   leaves the isolate, not while a request waits its turn in it) and rejects with a DeadlineError
 *   (deadline.js) when one does not answer in time; the fallback chain then adds no deadline of its own.
 * Peeking (options.peek) must charge nothing, in every store.
 * @typedef {{
 *   readonly name: string;
 *   readonly ownDeadline?: boolean;
 *   decide(checks: readonly StoreCheck[], options?: StoreOptions): Outcome | Promise<Outcome>;
 *   reset?(checks: readonly StoreCheck[], options?: StoreOptions): void | Promise<void>;
 *   readonly blockList?: import("./block-list-table.js").BlockListStore;
 *   isolateTables?(rule: NormalizedRule): IsolateTable[];
 *   isBound?(env: unknown): boolean;
  checkBindings?(env: unknown): void;
 *   decideLocally?(checks: readonly StoreCheck[], options: StoreOptions): Outcome | null;
 *   decideRemotely?(checks: readonly StoreCheck[], options?: StoreOptions): Promise<Outcome>;
 *   timeoutFor?(checks: readonly StoreCheck[]): number;
 *   timedOut?(checks: readonly StoreCheck[], usedMs: number): void;
 *   takeBack?(outcome: Outcome): Promise<{ undone: number, missed: number }>;
 * }} Store
 */

export {};
