// Options of concurrency() and createConcurrencyLimiter(), validated and normalized once, at
// construction. Every mistake throws a SluiceConfigError naming the option.
import { SluiceError } from "../../../../wasm-bindings/sluice.js";
import { nowMs } from "../../engine/clock.js";
import { SluiceConfigError, describe } from "../../engine/errors.js";
import { declareTables, memoryTable, tableBytes, validateRule } from "../../engine/isolate.js";
import { toKeyFunction } from "../../http/keys.js";
import { checkBinding } from "../../stores/binding.js";
import { checkTimeout } from "../../stores/deadline.js";
/** @import { NormalizedRule } from "../../stores/store.js" */

/** The core's bounds for the rule (sluice::concurrency::kMaxConcurrency, kMaxLeaseMs). */
export const MAX_CONCURRENCY = 2 ** 16;
export const MAX_LEASE_MS = 2 ** 31;
/** How long a holder keeps its units without renewing, by default. */
export const DEFAULT_LEASE_SEC = 30;
/** Keys (users, IPs) the memory store's table holds by default, if that fits DEFAULT_TABLE_BYTES. */
export const DEFAULT_KEY_CAPACITY = 10_000;
/** A default-sized table stays within this: each key holds 8 bytes per unit of max. */
export const DEFAULT_TABLE_BYTES = 4 * 1024 * 1024;
const MIN_DEFAULT_KEYS = 16;
/** How long the Durable Object may take to answer an acquisition before the fallback decides. */
export const DEFAULT_TIMEOUT_MS = 1_000;
export const DEFAULT_CODE = "too_many_concurrent";
const RULE_NAME = /^[\x20-\x21\x23-\x5b\x5d-\x7b\x7d-\x7e]{1,64}$/;

const FIELDS = ["key", "max", "leaseSec", "cost", "name", "keyCapacity", "store", "binding", "timeoutMs", "fallback", "failMode", "status", "code", "retryAfterSec", "renewEverySec", "clock", "skip", "onLimited", "messages"];

/**
 * The options every surface takes; key, cost and skip functions receive `Args` ([c] in Hono,
 * [request, env, ctx] for createConcurrencyLimiter).
 * @template {unknown[]} [Args=any[]]
 * @typedef {object} ConcurrencyCommonOptions
 * @property {import("../../http/keys.js").KeySource<Args>} key what holders are counted under: a key function (ip(), user(fn), ...) or a fixed string
 * @property {number} max how many units may be held at once per key (1 to 65536)
 * @property {number} [leaseSec] how long a holder that stops renewing keeps its units (default 30)
 * @property {number | ((...args: Args) => number | Promise<number>)} [cost] units a request holds (default 1)
 * @property {string} [name] the rule's name (default `${max}-concurrent`)
 * @property {number} [keyCapacity] keys the memory store's table holds (default 10 000)
 * @property {"memory" | "durable"} [store] where holders are counted: this isolate, or exactly across isolates (default "memory")
 * @property {string | DurableObjectNamespace} [binding] the Durable Object namespace or its name in env (default "SLUICE_DO"); store "durable" only. A name env lacks throws a SluiceConfigError at acquisition (never a fallback)
 * @property {number} [timeoutMs] how long an acquisition may wait for the object (default 1000); store "durable" only
 * @property {boolean} [fallback] when the object fails, count in the isolate's memory (default true); store "durable" only
 * @property {"open" | "closed"} [failMode] when nothing can count: admit ("open", default) or refuse ("closed")
 * @property {number} [status] the status of a refused request (default 429)
 * @property {string} [code] the `code` of the refusal's JSON body
 * @property {number} [retryAfterSec] a fixed Retry-After instead of the core's (when enough leases would run out)
 * @property {number} [renewEverySec] how often an open holder renews (default leaseSec / 3)
 * @property {() => number} [clock] milliseconds since the epoch, for the memory store (tests)
 * @property {(...args: Args) => boolean | Promise<boolean>} [skip] requests for which it returns true are not counted
 * @property {import("../websocket/message-limit.js").MessageLimiter} [messages] limits the client's messages on a held WebSocket
 */

/**
 * Any surface's options, as normalizeConcurrencyOptions takes them.
 * @typedef {ConcurrencyCommonOptions<any[]> & { onLimited?: (...args: any[]) => any }} ConcurrencyOptions
 */
/** @typedef {import("../websocket/message-limit.js").MessageLimiter} MessageLimiter */

/** @param {unknown} value @param {string} field @param {number} min @param {number} max @returns {number} */
function wholeNumber(value, field, min, max) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new SluiceConfigError(field, `must be a whole number from ${min} to ${max}; got ${describe(value)}`);
  }
  return value;
}

/** @param {unknown} value @param {string} field @param {number} max @returns {number} */
function secondsAsMs(value, field, max) {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new SluiceConfigError(field, `must be a positive number of seconds; got ${describe(value)}`);
  }
  const ms = Math.round(value * 1000);
  if (ms < 1 || Math.abs(ms - value * 1000) > 1e-6) throw new SluiceConfigError(field, `must be a whole number of milliseconds (in seconds: ${describe(value)})`);
  if (ms > max) throw new SluiceConfigError(field, `must be at most ${max / 1000} seconds; got ${describe(value)}`);
  return ms;
}

// As many keys as fit DEFAULT_TABLE_BYTES (at most DEFAULT_KEY_CAPACITY): a large max holds fewer keys.
/** @param {number} max @returns {number} */
function defaultKeyCapacity(max) {
  let capacity = DEFAULT_KEY_CAPACITY;
  while (capacity > MIN_DEFAULT_KEYS && tableBytes("concurrency", max, capacity) > DEFAULT_TABLE_BYTES) capacity = Math.floor(capacity * 0.9);
  return Math.max(capacity, MIN_DEFAULT_KEYS);
}

/** @template {Function} F @param {F | undefined} value @param {string} field @returns {F | undefined} */
function optionalFunction(value, field) {
  if (value !== undefined && typeof value !== "function") throw new SluiceConfigError(field, `must be a function; got ${describe(value)}`);
  return value;
}

/** @param {unknown} value @returns {MessageLimiter | null} */
function messageLimiter(value) {
  if (value === undefined) return null;
  if (value === null || typeof value !== "object" || typeof (/** @type {{ connection?: unknown }} */ (value).connection) !== "function") {
    throw new SluiceConfigError("messages", `must be a message limiter from createMessageLimiter(); got ${describe(value)}`);
  }
  return /** @type {MessageLimiter} */ (value);
}

/**
 * normalizeConcurrencyOptions validates `options` and returns the settings the engine runs on.
 * @param {ConcurrencyOptions} options
 */
export function normalizeConcurrencyOptions(options) {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new SluiceConfigError("options", `must be an object { key, max, leaseSec, ... }; got ${describe(options)}`);
  }
  for (const field of Object.keys(options)) {
    if (!FIELDS.includes(field)) throw new SluiceConfigError(field, `is not an option of concurrency (known: ${FIELDS.join(", ")})`);
  }
  if (options.key === undefined) throw new SluiceConfigError("key", "is missing: whose connections are counted? (ip(), user(fn), a string)");
  const key = toKeyFunction(options.key, "key");
  if (options.max === undefined) throw new SluiceConfigError("max", "is missing: how many may be open at once?");
  const max = wholeNumber(options.max, "max", 1, MAX_CONCURRENCY);
  const leaseMs = secondsAsMs(options.leaseSec ?? DEFAULT_LEASE_SEC, "leaseSec", MAX_LEASE_MS);
  const renewEveryMs = options.renewEverySec === undefined ? Math.max(1, Math.floor(leaseMs / 3)) : secondsAsMs(options.renewEverySec, "renewEverySec", MAX_LEASE_MS);
  // A holder that renews no sooner than its lease runs out loses its units while it is still open.
  if (renewEveryMs >= leaseMs) throw new SluiceConfigError("renewEverySec", `must be shorter than leaseSec (${leaseMs / 1000}); got ${describe(options.renewEverySec)}`);
  /** @type {number | ((...args: any[]) => number | Promise<number>)} */
  let cost = 1;
  if (typeof options.cost === "function") cost = options.cost;
  else if (options.cost !== undefined) cost = wholeNumber(options.cost, "cost", 1, max);
  const name = options.name ?? `${max}-concurrent`;
  if (typeof name !== "string" || !RULE_NAME.test(name)) {
    throw new SluiceConfigError("name", `must be 1 to 64 printable ASCII characters without '"', '\\' or '|'; got ${describe(name)}`);
  }
  const keyCapacity = options.keyCapacity === undefined ? defaultKeyCapacity(max) : wholeNumber(options.keyCapacity, "keyCapacity", 1, 2 ** 20);

  const store = options.store ?? "memory";
  if (store !== "memory" && store !== "durable") throw new SluiceConfigError("store", `must be 'memory' or 'durable'; got ${describe(store)}`);
  for (const field of ["binding", "timeoutMs", "fallback"]) {
    if (store === "memory" && options[/** @type {"binding" | "timeoutMs" | "fallback"} */ (field)] !== undefined) throw new SluiceConfigError(field, "applies to store 'durable'; this limiter's store is 'memory'");
  }
  const binding = options.binding ?? "SLUICE_DO";
  checkBinding(binding, "binding", ["idFromName", "get"]);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  checkTimeout(timeoutMs, "timeoutMs");
  const fallback = options.fallback ?? true;
  if (typeof fallback !== "boolean") throw new SluiceConfigError("fallback", `must be true (count in the isolate's memory when the object fails) or false; got ${describe(fallback)}`);
  const failMode = options.failMode ?? "open";
  if (failMode !== "open" && failMode !== "closed") throw new SluiceConfigError("failMode", `must be 'open' or 'closed'; got ${describe(failMode)}`);

  const status = options.status === undefined ? 429 : wholeNumber(options.status, "status", 400, 599);
  const code = options.code ?? DEFAULT_CODE;
  if (typeof code !== "string" || code === "") throw new SluiceConfigError("code", `must be a non-empty string; got ${describe(code)}`);
  const retryAfterSec = options.retryAfterSec === undefined ? null : wholeNumber(options.retryAfterSec, "retryAfterSec", 0, 86_400);
  const clock = optionalFunction(options.clock, "clock") ?? nowMs;

  // A NormalizedRule of the core's concurrency algorithm (the host's rule type names the rate algorithms).
  const rule = /** @type {NormalizedRule} */ (/** @type {unknown} */ (Object.freeze({ id: `${name}|concurrency|${max}|${leaseMs}|0`, name, algorithm: "concurrency", limit: max, windowMs: leaseMs, burst: 0, keyCapacity })));
  try {
    validateRule(rule);
  } catch (error) {
    if (!(error instanceof SluiceError)) throw error;
    const field = error.field === "windowMs" ? "leaseSec" : "max";
    throw new SluiceConfigError(field, `is out of range for a concurrency limit: ${describe(options[field])}`);
  }
  // The memory store's table (also the fallback's) shares the isolate's budget with every limiter.
  if (store === "memory" || fallback) {
    const problem = declareTables([memoryTable(rule)]);
    if (problem !== undefined) throw new SluiceConfigError("keyCapacity", problem);
  }
  return Object.freeze({
    rule,
    key,
    cost,
    leaseMs,
    renewEveryMs,
    store,
    binding,
    timeoutMs,
    fallback,
    failMode,
    status,
    code,
    retryAfterSec,
    clock,
    skip: optionalFunction(options.skip, "skip"),
    onLimited: optionalFunction(options.onLimited, "onLimited"),
    messages: messageLimiter(options.messages),
  });
}
