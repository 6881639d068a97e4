// Account lockout: after repeated failed logins, refuse further attempts for a while, without running
// the handler, answering alike whether or not the account exists.
//
//   const lockout = createLockout({ key: jsonField("username") });
//   const attempt = await lockout.check(request, env, ctx);
//   if (!attempt.allowed) return lockout.refusedResponse(attempt);
//   const response = await handle(request);
//   await lockout.settle(attempt, response);
//
// Per attempt: one peek of every scope's failures and locks before the handler (locked when any
// denies); after it, a failed attempt (a failure status, or attempt.fail()) charges each scope's
// failures; a charge that reaches maxFailures locks the scope (with backoff: for the length the count
// of recent lockouts picks) and clears its failures; a success (a status below 400 not listed as a
// failure, or attempt.succeed()) clears the failures and lockouts, unless resetOnSuccess is false.
// Everything is decided by the core through the store (options.js lists the rules).
import { storeKey } from "../../http/keys.js";
import { normalizeLockoutOptions } from "./options.js";
import { withDeadline } from "../../stores/deadline.js";

/** @import { NormalizedRule, Store, StoreCheck } from "../../stores/store.js" */

/**
 * @typedef {object} LockoutAttempt
 * @property {boolean} allowed Whether the handler may run: false when locked or without an account.
 * @property {"locked" | "missing_account" | null} reason Why not.
 * @property {string | null} account The account as counted (normalized), null when missing.
 * @property {number} retryAfterMs When locked: until the longest lock in force ends.
 * @property {string | null} store Which store decided ("durable", "memory", or "none": failMode did).
 * @property {() => void} fail Counts this attempt as failed, whatever its response's status.
 * @property {() => void} succeed Counts this attempt as successful, whatever its response's status.
 */

/**
 * @typedef {object} LockoutSettlement
 * @property {"failure" | "success" | "neutral"} outcome What the attempt counted as.
 * @property {Array<"client" | "account">} locked The scopes this attempt locked.
 * @property {boolean} counted False when no store could count the failure (failMode decided).
 */

/**
 * What the engine keeps of an attempt until it is settled: its scopes' keys (null without an account),
 * the request's env and ctx for the stores, and an explicit verdict (fail() or succeed()).
 * @typedef {{ keys: string[] | null, env: any, ctx: any, verdict: "failure" | "success" | null, settled: boolean }} AttemptState
 */

const PEEK = true;
const LOCKED_BODY_ERROR = "too many failed attempts";

/** @param {() => number} clock @returns {number} */
function currentTime(clock) {
  const now = Math.floor(clock());
  if (!(now >= 0)) throw new RangeError(`sluice: clock() returned ${String(now)}; it must return milliseconds since the epoch`);
  return now;
}

/** @param {unknown} value @returns {string | undefined} */
function textOf(value) {
  if (value === undefined || value === null) return undefined;
  const text = typeof value === "string" ? value : String(value);
  return text === "" ? undefined : text;
}

// "|" joins the parts of a scope's key and "%" escapes, so no account can pass for another with a client.
/** @param {string} text @returns {string} */
function escapePart(text) {
  return /[%|]/.test(text) ? text.replace(/%/g, "%25").replace(/\|/g, "%7C") : text;
}

/**
 * createLockoutEngine validates `options` and returns the engine the middleware and createLockout
 * share: { settings, check(args, env, ctx), settle(attempt, status), refusedResponse(attempt) }, where
 * `args` are what key functions receive ([c] in Hono, [request, env, ctx] otherwise).
 * @param {unknown} options
 */
export function createLockoutEngine(options) {
  const settings = normalizeLockoutOptions(options);
  const { scopes, clock, normalize, failureStatuses, resetOnSuccess, code, resetTimeoutMs } = settings;
  // normalizeLockoutOptions refused any store without reset.
  const store = /** @type {Required<Store>} */ (settings.store);
  const accountKey = /** @type {(...args: unknown[]) => unknown} */ (settings.account);
  const client = /** @type {((...args: unknown[]) => unknown) | null} */ (settings.client);
  /** Failures of the stores that this lockout saw; each also degrades as documented. */
  const counters = {
    /** Clearing failures (after a lock, or a success) failed or timed out: they age out of their window instead. */
    resetFailures: 0,
  };
  /** @type {WeakMap<LockoutAttempt, AttemptState>} */
  const state = new WeakMap();

  /**
   * Every scope's store key for the attempt, or null when the request names no account.
   * @param {unknown[]} args
   */
  async function keysOf(args) {
    const raw = textOf(await accountKey(...args));
    if (raw === undefined) return null;
    const account = normalize === null ? raw : textOf(normalize(raw));
    if (account === undefined) return null;
    const accountPart = `account:${escapePart(account)}`;
    /** @type {string | null} */
    let clientPart = null;
    if (client !== null) clientPart = textOf(await client(...args)) ?? "unknown";
    const keys = await Promise.all(scopes.map((scope) => storeKey(scope.scope === "client" ? `${accountPart}|${clientPart}` : accountPart)));
    return { account, keys };
  }

  /**
   * Clears `checks` ({ rule, key }): bounded, and a failure is counted, never thrown into the
   * response (the failures then age out of their window; a lock is never cleared this way).
   * @param {Array<{ rule: NormalizedRule, key: string }>} checks @param {any} env @param {any} ctx
   */
  async function clear(checks, env, ctx) {
    try {
      await withDeadline(store.reset(checks.map(({ rule, key }) => ({ rule, key, cost: 1 })), { nowMs: currentTime(clock), env, ctx }), resetTimeoutMs, "lockout reset");
      return true;
    } catch {
      counters.resetFailures++;
      return false;
    }
  }

  /** @param {any} env @param {any} ctx @param {NormalizedRule} rule @param {string} key */
  function decideOne(rule, key, env, ctx) {
    return store.decide([{ rule, key, cost: 1 }], { nowMs: currentTime(clock), env, ctx });
  }

  /** @param {Omit<LockoutAttempt, "fail" | "succeed">} fields @param {AttemptState} internal @returns {LockoutAttempt} */
  function newAttempt(fields, internal) {
    const attempt = {
      ...fields,
      fail() {
        internal.verdict = "failure";
      },
      succeed() {
        internal.verdict = "success";
      },
    };
    state.set(attempt, internal);
    return Object.freeze(attempt);
  }

  /**
   * check peeks every scope's failures and locks for the attempt `args` describe.
   * @param {unknown[]} args @param {any} env @param {any} ctx
   * @returns {Promise<LockoutAttempt>}
   */
  async function check(args, env, ctx) {
    const found = await keysOf(args);
    if (found === null) {
      return newAttempt({ allowed: false, reason: "missing_account", account: null, retryAfterMs: 0, store: null }, { keys: null, env, ctx, verdict: null, settled: true });
    }
    /** @type {StoreCheck[]} */
    const checks = [];
    scopes.forEach((scope, i) => {
      const key = found.keys[i];
      checks.push({ rule: scope.failures, key, cost: 1 });
      for (const lock of scope.locks) checks.push({ rule: lock, key, cost: 1 });
    });
    const outcome = await store.decide(checks, { nowMs: currentTime(clock), peek: PEEK, env, ctx });
    return newAttempt(
      {
        allowed: outcome.allowed,
        reason: outcome.allowed ? null : "locked",
        account: found.account,
        retryAfterMs: outcome.allowed ? 0 : outcome.retryAfterMs,
        store: outcome.store ?? null,
      },
      { keys: found.keys, env, ctx, verdict: null, settled: !outcome.allowed },
    );
  }

  // A failure in one scope: charged; when it reaches maxFailures (or finds them reached), the scope
  // is locked and its failures cleared. Returns whether it locked, or null when nothing could count it.
  /** @param {(typeof scopes)[number]} scope @param {string} key @param {any} env @param {any} ctx @returns {Promise<boolean | null>} */
  async function chargeFailure(scope, key, env, ctx) {
    const failures = await decideOne(scope.failures, key, env, ctx);
    if (failures.store === "none") return null;
    if (failures.allowed && failures.remaining > 0) return false;
    let level = 0;
    if (scope.lockouts !== null) {
      const lockouts = await decideOne(scope.lockouts, key, env, ctx);
      // The nth lockout within the backoff window takes the nth lock length; past the last, the last.
      if (lockouts.store !== "none") level = lockouts.allowed ? lockouts.limit - lockouts.remaining - 1 : scope.locks.length - 1;
    }
    await decideOne(scope.locks[level], key, env, ctx);
    await clear([{ rule: scope.failures, key }], env, ctx);
    return true;
  }

  /** @param {AttemptState} internal @param {number} status @returns {"failure" | "success" | "neutral"} */
  function classify(internal, status) {
    if (internal.verdict !== null) return internal.verdict;
    if (failureStatuses.includes(status)) return "failure";
    return status >= 200 && status < 400 ? "success" : "neutral";
  }

  /**
   * settle counts the attempt once, from its explicit verdict or else its response's `status`.
   * @param {LockoutAttempt} attempt @param {number} status
   * @returns {Promise<LockoutSettlement>}
   */
  async function settle(attempt, status) {
    const internal = state.get(attempt);
    if (internal === undefined) throw new TypeError("sluice: settle() takes an attempt this lockout's check() returned");
    if (internal.settled) return { outcome: "neutral", locked: [], counted: false };
    internal.settled = true;
    const outcome = classify(internal, status);
    const { env, ctx } = internal;
    // An attempt without an account (keys null) was settled when it was made.
    const keys = /** @type {string[]} */ (internal.keys);
    if (outcome === "failure") {
      const results = await Promise.all(scopes.map((scope, i) => chargeFailure(scope, keys[i], env, ctx)));
      return {
        outcome,
        locked: scopes.filter((_, i) => results[i] === true).map((scope) => scope.scope),
        counted: results.every((result) => result !== null),
      };
    }
    if (outcome === "success" && resetOnSuccess) {
      /** @type {Array<{ rule: NormalizedRule, key: string }>} */
      const checks = [];
      scopes.forEach((scope, i) => {
        checks.push({ rule: scope.failures, key: keys[i] });
        if (scope.lockouts !== null) checks.push({ rule: scope.lockouts, key: keys[i] });
      });
      await clear(checks, env, ctx);
    }
    return { outcome, locked: [], counted: true };
  }

  /**
   * refusedResponse is the answer to an attempt that may not proceed: 429 with Retry-After while
   * locked, 400 without an account. What a locked response says depends only on how long the lock
   * lasts: never on whether the account exists, nor on which scope is locked.
   * @param {LockoutAttempt} attempt
   * @returns {Response}
   */
  function refusedResponse(attempt) {
    if (attempt.reason === "missing_account") {
      return Response.json({ error: "the request names no account", code: "missing_account" }, { status: 400, headers: { "cache-control": "no-store" } });
    }
    const retryAfter = Math.max(1, Math.ceil(attempt.retryAfterMs / 1000));
    return Response.json(
      { error: LOCKED_BODY_ERROR, code, retryAfter },
      { status: 429, headers: { "retry-after": String(retryAfter), "cache-control": "no-store" } },
    );
  }

  return { settings, counters, check, settle, refusedResponse };
}

/**
 * The framework-free lockout createLockout returns.
 * @typedef {object} Lockout
 * @property {(request: Request, env?: unknown, ctx?: unknown) => Promise<LockoutAttempt>} check Whether `request` may try.
 * @property {(attempt: LockoutAttempt, response: Response | number) => Promise<LockoutSettlement>} settle Counts the attempt once the handler answered.
 * @property {(attempt: LockoutAttempt) => Response} refusedResponse The 429 (locked) or 400 (no account) of an attempt not allowed.
 * @property {{ resetFailures: number }} counters Resets that failed (failures then age out instead).
 */

/**
 * createLockout builds account lockout for a plain fetch handler (no framework); see the top of this
 * file. Key functions receive (request, env, ctx). Configuration errors throw here.
 * @param {import("./options.js").LockoutOptions<[request: Request, env: any, ctx: any]>} options See docs/lockout.md.
 * @returns {Lockout}
 */
export function createLockout(options) {
  const engine = createLockoutEngine(options);
  return Object.freeze({
    counters: engine.counters,
    /**
     * check decides whether `request` may try: resolves to a LockoutAttempt.
     * @param {Request} request @param {unknown} [env] @param {unknown} [ctx]
     * @returns {Promise<LockoutAttempt>}
     */
    check(request, env, ctx) {
      return engine.check([request, env, ctx], env, ctx);
    },
    /**
     * settle counts `attempt` from its explicit fail()/succeed(), else from `response` (a Response or
     * a status); call it once the handler has answered, before returning the response.
     * @param {LockoutAttempt} attempt @param {Response | number} response
     * @returns {Promise<LockoutSettlement>}
     */
    settle(attempt, response) {
      return engine.settle(attempt, typeof response === "number" ? response : response.status);
    },
    /**
     * refusedResponse is the 429 (locked) or 400 (no account) for an attempt that is not allowed.
     * @param {LockoutAttempt} attempt @returns {Response}
     */
    refusedResponse(attempt) {
      return engine.refusedResponse(attempt);
    },
  });
}
