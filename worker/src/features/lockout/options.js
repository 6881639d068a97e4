// Options of lockout() and createLockout(), validated and normalized once, at construction; every
// mistake throws a SluiceConfigError naming the option.
//
// A lockout is made of ordinary rules of the core, so no window is computed here (lockout.js):
//  - failures: a sliding log of `maxFailures` over `windowSec`, peeked before the handler, charged
//    after a failed attempt;
//  - lock: a sliding log of limit 1 over `lockSec`: the one charge that locks denies every peek for
//    lockSec;
//  - with backoff, one lock rule per lock length, and lockouts: a sliding log counting recent lockouts,
//    whose remaining picks the length of the next lock.
// Each is kept per scope: per (account, client) and per account.
import { MAX_CHECKS_PER_CALL } from "../../../../wasm-bindings/sluice.js";
import { normalizeAccount } from "../../http/account.js";
import { nowMs } from "../../engine/clock.js";
import { SluiceConfigError, describe } from "../../engine/errors.js";
import { declareTables } from "../../engine/isolate.js";
import { ip, toKeyFunction } from "../../http/keys.js";
import { isPlainObject, normalizeRuleSpec, refuseUnknown, wholeNumber } from "../../engine/options.js";
import { DEFAULT_TIMEOUT_MS } from "../../stores/chain.js";
import { STORE_FIELDS, resolveStore, storeName } from "../../stores/registry.js";

/** @import { KeyFunction, KeyHelper, KeySource } from "../../http/keys.js" */
/** @import { BreakerOptions } from "../../stores/breaker.js" */
/** @import { NormalizedRule, Store } from "../../stores/store.js" */
/** Lock lengths that grow: each lock `factor` times the one before, up to maxLockMs, counted over windowMs. @typedef {{ factor: number, maxLockMs: number, windowMs: number }} Backoff */

/**
 * The options of lockout() and createLockout(); every one but `key` has a default (docs/lockout.md).
 * @template {unknown[]} [Args=any[]]
 * @typedef {object} LockoutOptions
 * @property {KeySource<Args>} key The account: a key function such as jsonField("username").
 * @property {KeyFunction<Args> | KeyHelper | false} [client] Who tries, counted with the account; default ip(); false: per account only.
 * @property {number} [maxFailures] Failures per (account, client) within windowSec that lock it; default 5.
 * @property {number} [windowSec] The window failures are counted in; default 900.
 * @property {number} [lockSec] How long a lock lasts; default 900.
 * @property {{ maxFailures?: number, windowSec?: number, lockSec?: number } | false} [account] The per-account scope; default { maxFailures: 4 * maxFailures }; false for none.
 * @property {{ factor?: number, maxLockSec?: number, windowSec?: number } | boolean} [backoff] Growing locks for repeated lockouts; default false.
 * @property {readonly number[]} [failureStatuses] Statuses counted as failures; default [401, 403].
 * @property {boolean} [resetOnSuccess] Whether a success clears the failures and lockouts; default true.
 * @property {((name: string) => string) | boolean} [normalize] Account normalization; default normalizeAccount; false for none.
 * @property {string} [name] Prefix of the rules' names (counters are shared by name); default "lockout".
 * @property {number} [keyCapacity] Keys each rule's table holds in an isolate; default 10000.
 * @property {string} [code] The locked body's code; default "locked_out".
 * @property {() => number} [clock] The clock, in ms since the epoch; default the wall clock.
 * @property {"durable" | "memory" | Store} [store] Default "durable"; "kv" is refused.
 * @property {readonly [] | readonly ["memory"]} [fallback] Default ["memory"].
 * @property {"open" | "closed"} [failMode] Default "closed".
 * @property {{ durable?: string, kv?: string }} [bindings]
 * @property {number | "key"} [shards]
 * @property {number} [timeoutMs]
 * @property {BreakerOptions | boolean} [breaker]
 * @property {boolean} [preFilter]
 * @property {number} [logIntervalMs]
 */

export const DEFAULT_MAX_FAILURES = 5;
export const DEFAULT_WINDOW_SEC = 15 * 60;
export const DEFAULT_LOCK_SEC = 15 * 60;
/** Failures per account from every client lock at this multiple of the per-client maxFailures. */
export const ACCOUNT_FAILURES_FACTOR = 4;
export const DEFAULT_FAILURE_STATUSES = Object.freeze([401, 403]);
export const DEFAULT_BACKOFF = Object.freeze({ factor: 2, maxLockSec: 24 * 60 * 60, windowSec: 24 * 60 * 60 });
/** Keys each lockout rule's table holds in an isolate (the memory store, or the memory fallback). */
export const DEFAULT_LOCKOUT_KEY_CAPACITY = 10_000;
export const DEFAULT_LOCKED_CODE = "locked_out";
/** Lockout's store defaults; why, in docs/lockout.md, "When the Durable Object is down". */
export const LOCKOUT_STORE_DEFAULTS = Object.freeze({ store: "durable", fallback: Object.freeze(["memory"]), failMode: "closed" });
const MAX_FAILURES = 1000;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/;

const LOCKOUT_FIELDS = [
  "key",
  "client",
  "maxFailures",
  "windowSec",
  "lockSec",
  "account",
  "backoff",
  "failureStatuses",
  "resetOnSuccess",
  "normalize",
  "name",
  "keyCapacity",
  "code",
  "clock",
  ...STORE_FIELDS,
];
const ACCOUNT_FIELDS = ["maxFailures", "windowSec", "lockSec"];
const BACKOFF_FIELDS = ["factor", "maxLockSec", "windowSec"];

// Seconds as whole milliseconds (the core's unit); its upper bound is the core's (normalizeRuleSpec).
/** @param {unknown} value @param {string} field @returns {number} */
function durationMs(value, field) {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new SluiceConfigError(field, `must be a positive number of seconds; got ${describe(value)}`);
  }
  const ms = Math.round(value * 1000);
  if (ms < 1 || Math.abs(ms - value * 1000) > 1e-6) throw new SluiceConfigError(field, `must be a whole number of milliseconds (in seconds: ${describe(value)})`);
  return ms;
}

// A rule of the lockout, built and bounded by the host like any rule; a refusal of the core names the
// lockout's own option (`field`), not the rule's.
/** @param {string} name @param {number} limit @param {number} windowMs @param {number} keyCapacity @param {string} field @returns {NormalizedRule} */
function lockoutRule(name, limit, windowMs, keyCapacity, field) {
  try {
    return normalizeRuleSpec({ name, algorithm: "sliding-log", limit, windowMs, keyCapacity });
  } catch (error) {
    if (error instanceof SluiceConfigError) throw new SluiceConfigError(field, error.problem);
    throw error;
  }
}

/** @param {unknown} backoff @returns {Backoff | null} */
function normalizeBackoff(backoff) {
  if (backoff === undefined || backoff === false) return null;
  const given = backoff === true ? {} : backoff;
  if (!isPlainObject(given)) throw new SluiceConfigError("backoff", `must be false, true or { factor, maxLockSec, windowSec }; got ${describe(backoff)}`);
  refuseUnknown(given, BACKOFF_FIELDS, "backoff.");
  const { factor = DEFAULT_BACKOFF.factor, maxLockSec = DEFAULT_BACKOFF.maxLockSec, windowSec = DEFAULT_BACKOFF.windowSec } = given;
  if (typeof factor !== "number" || !Number.isFinite(factor) || factor <= 1 || factor > 100) {
    throw new SluiceConfigError("backoff.factor", `must be a number above 1 and at most 100; got ${describe(factor)}`);
  }
  const maxLockMs = durationMs(maxLockSec, "backoff.maxLockSec");
  return { factor, maxLockMs, windowMs: durationMs(windowSec, "backoff.windowSec") };
}

// The lock lengths of one scope: lockMs, then each `factor` times the one before, up to maxLockMs.
// Configuration only: the core decides when a lock ends.
/** @param {number} lockMs @param {Backoff | null} backoff @returns {number[]} */
function lockLengths(lockMs, backoff) {
  if (backoff === null) return [lockMs];
  if (backoff.maxLockMs <= lockMs) return [lockMs];
  const lengths = [lockMs];
  while (lengths[lengths.length - 1] < backoff.maxLockMs) {
    lengths.push(Math.min(backoff.maxLockMs, Math.round(lengths[lengths.length - 1] * backoff.factor)));
  }
  return lengths;
}

/**
 * @param {"client" | "account"} scope @param {number} maxFailures @param {number} windowMs @param {number} lockMs
 * @param {Backoff | null} backoff @param {string} name @param {number} keyCapacity @param {string} where
 */
function normalizeScope(scope, maxFailures, windowMs, lockMs, backoff, name, keyCapacity, where) {
  const prefix = `${name}.${scope}`;
  const lengths = lockLengths(lockMs, backoff);
  return Object.freeze({
    scope,
    maxFailures,
    failures: lockoutRule(`${prefix}.failures`, maxFailures, windowMs, keyCapacity, `${where}windowSec`),
    locks: Object.freeze(
      lengths.map((ms, level) => lockoutRule(level === 0 ? `${prefix}.lock` : `${prefix}.lock.${level}`, 1, ms, keyCapacity, level === 0 ? `${where}lockSec` : "backoff.maxLockSec")),
    ),
    lockouts: backoff === null ? null : lockoutRule(`${prefix}.lockouts`, lengths.length, backoff.windowMs, keyCapacity, "backoff.windowSec"),
  });
}

/** @param {unknown} client @returns {KeyFunction | null} */
function normalizeClient(client) {
  if (client === undefined) return ip();
  if (client === false) return null;
  return toKeyFunction(client, "client");
}

/** @param {Record<string, any>} options @returns {Store} */
function normalizeStore(options) {
  if (storeName(options.store) === "kv") {
    throw new SluiceConfigError("store", "cannot be 'kv' for lockout: KV is eventually consistent (a lock set in one location is unseen in another for up to a minute) and cannot clear a count; use 'durable' or 'memory'");
  }
  if (Array.isArray(options.fallback) && options.fallback.includes("kv")) {
    throw new SluiceConfigError(`fallback[${options.fallback.indexOf("kv")}]`, "cannot be 'kv' for lockout: KV cannot clear a count nor show a lock everywhere at once; give [\"memory\"] or []");
  }
  /** @type {Record<string, unknown>} */
  const given = {};
  for (const field of STORE_FIELDS) if (options[field] !== undefined) given[field] = options[field];
  const named = given.store ?? LOCKOUT_STORE_DEFAULTS.store;
  const defaults = storeName(named) === "durable" ? { fallback: LOCKOUT_STORE_DEFAULTS.fallback, failMode: LOCKOUT_STORE_DEFAULTS.failMode } : {};
  const store = resolveStore({ ...defaults, ...given, store: named });
  if (typeof store.reset !== "function") {
    throw new SluiceConfigError("store", "must have reset(checks, options): lockout clears failures after a success and after a lock");
  }
  return store;
}

/** @param {unknown} statuses @returns {readonly number[]} */
function normalizeFailureStatuses(statuses) {
  if (statuses === undefined) return DEFAULT_FAILURE_STATUSES;
  if (!Array.isArray(statuses)) throw new SluiceConfigError("failureStatuses", `must be an array of HTTP statuses from 400 to 599; got ${describe(statuses)}`);
  statuses.forEach((status, i) => wholeNumber(status, `failureStatuses[${i}]`, 400, 599));
  return Object.freeze([...statuses]);
}

/** @param {unknown} normalize @returns {((account: string) => string | null) | null} */
function normalizeNormalize(normalize) {
  if (normalize === undefined || normalize === true) return normalizeAccount;
  if (normalize === false) return null;
  if (typeof normalize !== "function") throw new SluiceConfigError("normalize", `must be false or a function from the account name to its canonical form; got ${describe(normalize)}`);
  return /** @type {(account: string) => string | null} */ (normalize);
}

/**
 * normalizeLockoutOptions validates the options of lockout() and createLockout() and returns the
 * settings: { account (key function), client (key function or null), scopes, failureStatuses,
 * resetOnSuccess, normalize, code, store, clock }. scopes lists, per scope ("client": per account and
 * client; "account": per account from every client), { scope, maxFailures, failures, locks, lockouts }.
 * @param {unknown} options
 */
export function normalizeLockoutOptions(options) {
  if (!isPlainObject(options)) throw new SluiceConfigError("options", `must be an object; got ${describe(options)}`);
  refuseUnknown(options, LOCKOUT_FIELDS, "");
  if (options.key === undefined) throw new SluiceConfigError("key", "is missing: give the account's key function, such as jsonField(\"username\")");
  const account = toKeyFunction(options.key, "key");
  const client = normalizeClient(options.client);

  const maxFailures = wholeNumber(options.maxFailures ?? DEFAULT_MAX_FAILURES, "maxFailures", 1, MAX_FAILURES);
  const windowMs = durationMs(options.windowSec ?? DEFAULT_WINDOW_SEC, "windowSec");
  const lockMs = durationMs(options.lockSec ?? DEFAULT_LOCK_SEC, "lockSec");
  const backoff = normalizeBackoff(options.backoff);
  const name = options.name ?? "lockout";
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new SluiceConfigError("name", `must be 1 to 40 letters, digits, '_', '.' or '-', starting with a letter or digit; got ${describe(name)}`);
  }
  const keyCapacity = wholeNumber(options.keyCapacity ?? DEFAULT_LOCKOUT_KEY_CAPACITY, "keyCapacity", 1, 1_000_000);

  const scopes = [];
  if (client === null) {
    if (options.account !== undefined && options.account !== false) {
      throw new SluiceConfigError("account", "cannot be given with client: false (maxFailures, windowSec and lockSec then count per account)");
    }
    scopes.push(normalizeScope("account", maxFailures, windowMs, lockMs, backoff, name, keyCapacity, ""));
  } else {
    scopes.push(normalizeScope("client", maxFailures, windowMs, lockMs, backoff, name, keyCapacity, ""));
    if (options.account !== false) {
      const given = options.account ?? {};
      if (!isPlainObject(given)) throw new SluiceConfigError("account", `must be false or { maxFailures, windowSec, lockSec }; got ${describe(given)}`);
      refuseUnknown(given, ACCOUNT_FIELDS, "account.");
      const accountFailures = wholeNumber(given.maxFailures ?? maxFailures * ACCOUNT_FAILURES_FACTOR, "account.maxFailures", 1, MAX_FAILURES);
      if (accountFailures < maxFailures) {
        throw new SluiceConfigError("account.maxFailures", `${accountFailures} is below maxFailures (${maxFailures}): the per-account threshold counts every client's failures, so one client would lock the account before its own lock`);
      }
      const accountWindowMs = given.windowSec === undefined ? windowMs : durationMs(given.windowSec, "account.windowSec");
      const accountLockMs = given.lockSec === undefined ? lockMs : durationMs(given.lockSec, "account.lockSec");
      scopes.push(normalizeScope("account", accountFailures, accountWindowMs, accountLockMs, backoff, name, keyCapacity, "account."));
    }
  }
  // Before the handler one all-or-nothing peek asks every scope's failures and locks.
  const checks = scopes.reduce((sum, scope) => sum + 1 + scope.locks.length, 0);
  if (checks > MAX_CHECKS_PER_CALL) {
    throw new SluiceConfigError(
      "backoff.maxLockSec",
      `gives ${scopes[0].locks.length} lock lengths per scope: ${checks} checks before each attempt, more than the ${MAX_CHECKS_PER_CALL} of one call; raise backoff.factor or lower backoff.maxLockSec`,
    );
  }

  const store = normalizeStore(options);
  for (const scope of scopes) {
    for (const rule of [scope.failures, ...scope.locks, ...(scope.lockouts === null ? [] : [scope.lockouts])]) {
      const refusal = declareTables(store.isolateTables?.(rule) ?? []);
      if (refusal !== undefined) throw new SluiceConfigError("keyCapacity", refusal);
    }
  }

  const resetOnSuccess = options.resetOnSuccess ?? true;
  if (typeof resetOnSuccess !== "boolean") throw new SluiceConfigError("resetOnSuccess", `must be true or false; got ${describe(resetOnSuccess)}`);
  const code = options.code ?? DEFAULT_LOCKED_CODE;
  if (typeof code !== "string" || code === "") throw new SluiceConfigError("code", `must be a non-empty string; got ${describe(code)}`);
  const clock = options.clock ?? nowMs;
  if (typeof clock !== "function") throw new SluiceConfigError("clock", `must be a function; got ${describe(clock)}`);

  return Object.freeze({
    account,
    client,
    scopes: Object.freeze(scopes),
    failureStatuses: normalizeFailureStatuses(options.failureStatuses),
    resetOnSuccess,
    normalize: normalizeNormalize(options.normalize),
    code,
    store,
    // A reset (clearing failures) is bounded like a decision: the chain's timeout, per store.
    resetTimeoutMs: typeof options.timeoutMs === "number" ? options.timeoutMs : DEFAULT_TIMEOUT_MS,
    clock,
  });
}
