// The fallback chain: the primary store (the Durable Object) decides; when it throws or does not answer
// in time, KV decides if there is one, else the isolate's memory; when none can, `failMode` does.
// Every outcome says which store decided and, after a fallback, why.
//
// How long a store may take: a store that measures its round trips (the Durable Object store, per
// object: round-trip.js) says so itself (timeoutFor), so a far region waits for its far object and a
// near one gives up on a dead one soon; other stores get DEFAULT_TIMEOUT_MS; a `timeoutMs` number
// overrides both with one fixed timeout for every store.
//
// A slow answer is not a failure. A primary call that times out is not counted against its breaker
// yet: the chain decides without it, and waits (in the background, ctx.waitUntil) for the call to
// settle. If it answers late, that is a success, and its decision is reconciled with the one the
// chain gave (the answered decision wins): a charge the object made for a request the chain denied is
// undone; an admission the object denied is counted (`late.admittedUncounted`). Only a call that fails,
// or never answers within LATE_WINDOW (8 timeouts, 1 to 30 s), counts as a breaker failure.
//
// Every store of the chain has its own circuit breaker; once the breakers of failing stores are open,
// requests wait on them no more until one request probes each after its cooldown.
//
// A decision a fallback took is weaker than the primary's when it could admit what the primary would
// not (any fallback store, or failMode "open"): its `fallback.weakened` is true, and it is counted per
// deciding store (`weakened`), so it can be alerted on.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { CircuitBreaker, checkBreakerOptions } from "./breaker.js";
import { DeadlineError, checkTimeout, withDeadline } from "./deadline.js";
import { DenialCache } from "./denial-cache.js";
import { DEFAULT_LOG_INTERVAL_MS, checkLogOptions, createThrottledLog } from "./throttled-log.js";

/** @import { BreakerOptions } from "./breaker.js" */
/** @import { IsolateTable, NormalizedRule, Outcome, Store, StoreCheck, TimedStoreOptions } from "./store.js" */

/**
 * @typedef {object} FallbackChainOptions
 * @property {Store} primary The store that should decide (normally the Durable Object store).
 * @property {Store | null} [kv] Decides when the primary cannot.
 * @property {Store | null} [memory] The isolate's store, tried after kv; leave it out to go straight to failMode. A fallback
 *   whose binding env lacks (isBound(env) false) is passed over.
 * @property {"open" | "closed"} [failMode] "open" admits and "closed" denies when no store answers. Default "open".
 * @property {number} [timeoutMs] How long each store may take before the next is asked, fixed. Default: each store's own
 *   (timeoutFor, from its measured round trips: the Durable Object store), else 50 ms.
 * @property {BreakerOptions | boolean} [breaker] After `failures` failures in a row of a store, skip that store for
 *   `cooldownMs`, then let one request probe it; every store of the chain has its own breaker with these settings.
 *   Default { failures: 5, cooldownMs: 10000 }; false turns them all off.
 * @property {number} [lateWindowMs] How long the chain still waits, in the background, for a primary call that timed out
 *   before counting it unanswered (a breaker failure). Default 8 timeouts, within 1 s to 30 s.
 * @property {number} [failClosedRetryAfterMs] retryAfterMs of a fail-closed denial. Default 1000.
 * @property {boolean} [preFilter] Deny keys the primary denied from this isolate until their retry time. Default true.
 * @property {number} [preFilterMaxKeys] The most denied keys remembered. Default 10000.
 * @property {(line: string) => void} [log] Where fallbacks are reported. Default console.warn.
 * @property {number} [logIntervalMs] Fallbacks are logged at most once per interval. Default 60000.
 */
/**
 * @typedef {object} FallbackChainCounters
 * @property {Record<string, number>} decided Decisions per store that took them; "failMode" when none could.
 * @property {number} fallbacks Decisions the primary did not take because it failed.
 * @property {number} preFiltered Denials answered from the isolate's memory of earlier denials.
 * @property {Record<string, number>} errors Per store: calls that threw or rejected.
 * @property {Record<string, number>} timeouts Per store: calls that did not answer within timeoutMs.
 * @property {number} circuitOpened Times a store's circuit breaker opened (every store of the chain has one).
 * @property {number} circuitSkipped Times a store was skipped because its breaker was open (a skipped primary counts among fallbacks too).
 * @property {Record<string, number>} circuitOpenedBy The same as circuitOpened, per store.
 * @property {Record<string, number>} circuitSkippedBy The same as circuitSkipped, per store.
 * @property {Record<string, number>} weakened Decisions taken by a fallback weaker than the primary (a fallback store, or
 *   failMode "open"), per store that took them ("failMode" for failMode "open").
 * @property {LateCounters} late What became of primary calls the chain stopped waiting for.
 */
/**
 * @typedef {object} LateCounters
 * @property {number} answered Calls that answered after the chain had decided without them (slow, not failed).
 * @property {number} agreed Late answers that agreed with the decision the chain gave.
 * @property {number} undone Charges of late admissions taken back because the chain had denied the request.
 * @property {number} undoMissed Charges of late admissions that could not be taken back (the key was charged since, a
 *   lease call, the object restarted): the store counts a denied request, which errs towards denying.
 * @property {number} admittedUncounted Requests the chain admitted (a weakened fallback) that the primary denied when its
 *   answer came: admitted beyond the primary's count.
 * @property {number} failed Calls that failed after the chain stopped waiting (breaker failures).
 * @property {number} unanswered Calls that never answered within the late window (breaker failures; the primary may or
 *   may not have charged them).
 */
/**
 * A store made of others. decide takes options.nowMs, the isolate's clock (the primary may keep its own).
 * @typedef {{
 *   readonly name: "chain";
 *   readonly counters: Readonly<FallbackChainCounters>;
 *   decide(checks: readonly StoreCheck[], options: TimedStoreOptions): Outcome | Promise<Outcome>;
 *   reset(checks: readonly StoreCheck[], options: TimedStoreOptions): Promise<void>;
 *   isolateTables(rule: NormalizedRule): IsolateTable[];
 * }} FallbackChain
 */

const FAIL_MODES = ["open", "closed"];
/** What happens when no store can answer, by default: admit. */
export const DEFAULT_FAIL_MODE = /** @type {const} */ ("open");
/** How long a store that does not measure its round trips (timeoutFor) may take, by default. */
export const DEFAULT_TIMEOUT_MS = 50;
/** How long after a timeout the chain still waits for the late answer, in timeouts, and its bounds (ms). */
export const LATE_WINDOW = Object.freeze({ timeouts: 8, minMs: 1000, maxMs: 30_000 });

/**
 * createFallbackChain returns a store made of others.
 *
 * - primary: the store that should decide (normally createDurableStore(...)). Required.
 * - kv: a store to decide when the primary cannot (normally createKvStore(...)). Optional.
 * - memory: the isolate's store, tried after kv. Optional: leave it out to go straight to failMode.
 *   A fallback store whose binding env lacks (store.isBound(env) false) is passed over, and the
 *   reason says so.
 * - failMode: "open" admits and "closed" denies when no store answers. Default "open".
 * - timeoutMs: how long each store may take before the next one is asked, one fixed number for all.
 *   Default: each store's own timeoutFor(checks) (learnt from its round trips), else 50 ms.
 * - lateWindowMs: how long a primary call that timed out may still answer before it counts as
 *   unanswered (a breaker failure). Default 8 timeouts, within 1 s to 30 s.
 * - failClosedRetryAfterMs: the retryAfterMs of a fail-closed denial. Default 1000.
 * - breaker: after `failures` failures in a row of a store, skip that store for `cooldownMs`, then let
 *   one request probe it (breaker.js). Every store of the chain has its own breaker with these settings.
 *   Default { failures: 5, cooldownMs: 10000 }; false turns them all off.
 * - preFilter: deny, from this isolate, keys the primary denied until their retry time. Default true.
 * - preFilterMaxKeys: the most denied keys remembered. Default 10000.
 * - log, logIntervalMs: fallbacks are logged at most once per interval. Default console.warn, 60 s.
 *
 * decide needs options.nowMs (the isolate's clock; the primary may keep its own).
 * `counters` is live: decisions per store, fallbacks, pre-filtered denials, failures per store.
 * @param {FallbackChainOptions} options
 * @returns {FallbackChain}
 */
export function createFallbackChain(options = /** @type {any} */ ({})) {

  const {
    primary,
    kv = null,
    memory = null,
    failMode = DEFAULT_FAIL_MODE,
    timeoutMs,
    breaker: breakerOptions,
    failClosedRetryAfterMs = 1000,
    lateWindowMs,
    preFilter = true,
    preFilterMaxKeys = 10_000,
    log = console.warn,
    logIntervalMs = DEFAULT_LOG_INTERVAL_MS,
  } = options;
  checkStore(primary, "primary", false);
  checkStore(kv, "kv", true);
  checkStore(memory, "memory", true);
  if (!FAIL_MODES.includes(failMode)) throw new SluiceConfigError("failMode", `must be "open" or "closed"; got ${describe(failMode)}`);
  if (timeoutMs !== undefined) checkTimeout(timeoutMs, "timeoutMs");
  if (lateWindowMs !== undefined && !(typeof lateWindowMs === "number" && lateWindowMs > 0 && lateWindowMs <= LATE_WINDOW.maxMs)) {
    throw new SluiceConfigError("lateWindowMs", `must be a number of milliseconds > 0 and <= ${LATE_WINDOW.maxMs}; got ${describe(lateWindowMs)}`);
  }
  const breakerSettings = checkBreakerOptions(breakerOptions);
  if (typeof failClosedRetryAfterMs !== "number" || !(failClosedRetryAfterMs >= 0) || failClosedRetryAfterMs === Infinity) {
    throw new SluiceConfigError("failClosedRetryAfterMs", `must be a finite number of milliseconds >= 0; got ${describe(failClosedRetryAfterMs)}`);
  }
  if (typeof preFilter !== "boolean") throw new SluiceConfigError("preFilter", `must be true or false; got ${describe(preFilter)}`);
  if (!Number.isInteger(preFilterMaxKeys) || preFilterMaxKeys < 1) {
    throw new SluiceConfigError("preFilterMaxKeys", `must be a whole number >= 1; got ${describe(preFilterMaxKeys)}`);
  }
  checkLogOptions(log, logIntervalMs);

  const primaryName = primary.name ?? "durable";
  // After a local miss (decide below), the primary's remote half only: asking `decide` would count the
  // request twice in the lease's rate.
  const leased =
    typeof primary.decideLocally === "function" && typeof primary.decideRemotely === "function"
      ? /** @type {Required<Pick<Store, "decideLocally" | "decideRemotely">>} */ (primary)
      : null;
  /** @type {Store} */
  const primaryRemote =
    leased === null
      ? primary
      : {
          name: primaryName,
          ownDeadline: primary.ownDeadline,
          decide: (checks, options) => leased.decideRemotely(checks, options),
          timeoutFor: primary.timeoutFor,
          timedOut: primary.timedOut,
          takeBack: primary.takeBack,
        };
  const fallbacks = [kv === null ? null : [kv, kv.name ?? "kv"], memory === null ? null : [memory, memory.name ?? "memory"]].filter(
    (entry) => entry !== null,
  );
  const storeNames = [primaryName, ...fallbacks.map(([, name]) => name)];
  const counters = {
    /** Decisions per store that took them; "failMode" when none could. */
    decided: Object.fromEntries([...storeNames, "failMode"].map((name) => [name, 0])),
    /** Decisions the primary did not take (it failed), pre-filtered ones aside. */
    fallbacks: 0,
    /** Denials answered from this isolate's memory of the primary's earlier denials. */
    preFiltered: 0,
    /** Per store: calls that threw or rejected. */
    errors: Object.fromEntries(storeNames.map((name) => [name, 0])),
    /** Per store: calls that did not answer within timeoutMs. */
    timeouts: Object.fromEntries(storeNames.map((name) => [name, 0])),
    /** Times a store's circuit breaker opened (all stores; per store in circuitOpenedBy). */
    circuitOpened: 0,
    /** Times a store was skipped because its breaker was open (a skipped primary counts among fallbacks too). */
    circuitSkipped: 0,
    circuitOpenedBy: Object.fromEntries(storeNames.map((name) => [name, 0])),
    circuitSkippedBy: Object.fromEntries(storeNames.map((name) => [name, 0])),
    /** Decisions taken by a fallback weaker than the primary, per store that took them. */
    weakened: Object.fromEntries([...storeNames.slice(1), "failMode"].map((name) => [name, 0])),
    /** What became of primary calls the chain stopped waiting for. */
    late: { answered: 0, agreed: 0, undone: 0, undoMissed: 0, admittedUncounted: 0, failed: 0, unanswered: 0 },
  };
  /** @type {Map<string, CircuitBreaker | null>} */
  const breakers = new Map(
    /** @type {string[]} */ (storeNames).map((name) => [name, breakerSettings === null ? null : new CircuitBreaker(breakerSettings)]),
  );
  const breaker = breakers.get(primaryName) ?? null;
  const denials = preFilter ? new DenialCache(preFilterMaxKeys) : null;
  const report = createThrottledLog(log, logIntervalMs);

  function decide(checks, decideOptions = {}) {
    const { nowMs } = decideOptions;
    if (typeof nowMs !== "number" || !Number.isFinite(nowMs)) {
      throw new TypeError("the fallback chain needs options.nowMs (ms since the epoch)");
    }
    if (denials !== null) {
      const denied = denials.lookup(checks, nowMs);
      if (denied !== null) {
        counters.preFiltered++;
        return denied;
      }
    }
    // A primary that holds part of the count here (a lease: leases.js) decides from it first, with no
    // I/O, before the breaker: what it holds stays good while the primary is unreachable.
    if (leased !== null) {
      const local = leased.decideLocally(checks, decideOptions);
      if (local !== null) {
        counters.decided[primaryName]++;
        return local;
      }
    }
    return decideInOrder(checks, decideOptions, nowMs);
  }

  async function decideInOrder(checks, decideOptions, nowMs) {
    const failures = [];
    /** @type {{ late: Promise<unknown>, timeoutMs: number, probe: boolean } | null} */
    let slow = null;
    const gate = breaker === null ? "closed" : breaker.admit(nowMs);
    if (gate === "open") {
      countSkip(primaryName);
      failures.push(`${primaryName} skipped: ${/** @type {CircuitBreaker} */ (breaker).reason}`);
    } else {
      try {
        const outcome = await ask(primaryRemote, primaryName, checks, decideOptions);
        breaker?.succeeded();
        counters.decided[primaryName]++;
        // Not a peek's denial: for a blocking rule it reports a block that it did not start, and
        // remembering it would answer the check that starts the block here, never in the store.
        if (denials !== null && decideOptions.peek !== true) denials.remember(checks, outcome, nowMs);
        return outcome;
      } catch (error) {
        // A misconfigured store (e.g. a secret missing from env) is an error, not an outage to hide.
        if (error instanceof SluiceConfigError) throw error;
        if (error instanceof DeadlineError && error.late !== undefined) {
          // Slow is not failed: the breaker hears of this call when it settles (settleLate).
          slow = { late: error.late, timeoutMs: error.timeoutMs, probe: gate === "probe" };
        } else if (breaker !== null && breaker.failed(nowMs, gate === "probe")) {
          countOpened(primaryName);
        }
        failures.push(describeFailure(primaryName, error));
      }
    }
    const answered = await decideWithout(checks, decideOptions, nowMs, failures);
    if (slow !== null) settleLate(slow, answered, decideOptions, nowMs);
    return answered;
  }

  // The primary did not decide: the fallbacks in order, then failMode.
  async function decideWithout(checks, decideOptions, nowMs, failures) {
    counters.fallbacks++;
    for (const [store, name] of /** @type {Array<[Store, string]>} */ (fallbacks)) {
      if (store.isBound?.(decideOptions.env) === false) {
        failures.push(`${name} not bound`);
        continue;
      }
      const storeBreaker = breakers.get(name) ?? null;
      const storeGate = storeBreaker === null ? "closed" : storeBreaker.admit(nowMs);
      if (storeGate === "open") {
        countSkip(name);
        failures.push(`${name} skipped: ${/** @type {CircuitBreaker} */ (storeBreaker).reason}`);
        continue;
      }
      try {
        const outcome = await ask(store, name, checks, decideOptions);
        storeBreaker?.succeeded();
        counters.decided[name]++;
        const reason = failures.join("; ");
        report(nowMs, `${reason}; decided by ${name}`);
        counters.weakened[name]++;
        return { ...outcome, fallback: { from: primaryName, reason, weakened: true } };
      } catch (error) {
        if (storeBreaker !== null && storeBreaker.failed(nowMs, storeGate === "probe")) countOpened(name);
        failures.push(describeFailure(name, error));
      }
    }
    counters.decided.failMode++;
    if (failMode === "open") counters.weakened.failMode++;
    const reason = failures.length > 0 ? failures.join("; ") : `${primaryName} failed`;
    report(nowMs, `${reason}; no store could decide, failing ${failMode}`);
    return failModeOutcome(checks, reason);
  }

  /** @param {string} name */
  function countSkip(name) {
    counters.circuitSkipped++;
    counters.circuitSkippedBy[name]++;
  }
  /** @param {string} name */
  function countOpened(name) {
    counters.circuitOpened++;
    counters.circuitOpenedBy[name]++;
  }

  // Calls a store, bounded by its timeout (none when the store bounds its own calls: ownDeadline,
  // counted from when each call leaves the isolate); counts its failures.
  async function ask(store, name, checks, decideOptions) {
    const limitMs = timeoutMs ?? (typeof store.timeoutFor === "function" ? store.timeoutFor(checks) : DEFAULT_TIMEOUT_MS);
    try {
      return await withDeadline(store.decide(checks, decideOptions), store.ownDeadline === true ? Infinity : limitMs, name);
    } catch (error) {
      if (error instanceof DeadlineError) {
        counters.timeouts[name]++;
        store.timedOut?.(checks, limitMs);
      } else {
        counters.errors[name]++;
      }
      throw error;
    }
  }

  /**
   * settleLate waits, in the background, for a primary call the chain stopped waiting for, and
   * reconciles its decision with the one the chain gave (`answered`): the answered decision wins.
   * @param {{ late: Promise<unknown>, timeoutMs: number, probe: boolean }} slow
   * @param {Outcome} answered
   * @param {TimedStoreOptions} decideOptions
   * @param {number} nowMs
   */
  function settleLate({ late, timeoutMs: waitedMs, probe }, answered, decideOptions, nowMs) {
    const windowMs = lateWindowMs ?? Math.min(LATE_WINDOW.maxMs, Math.max(LATE_WINDOW.minMs, LATE_WINDOW.timeouts * waitedMs));
    /** @type {any} */
    let timer;
    const givenUp = new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), windowMs);
    });
    const settled = late.then(
      (outcome) => ({ outcome: /** @type {Outcome} */ (outcome) }),
      (error) => ({ error }),
    );
    const done = Promise.race([settled, givenUp]).then(async (result) => {
      clearTimeout(timer);
      if (result === null || "error" in /** @type {object} */ (result)) {
        if (result === null) counters.late.unanswered++;
        else counters.late.failed++;
        // On the isolate's clock as the request saw it, plus the wait: the breaker only compares times.
        if (breaker !== null && breaker.failed(nowMs + windowMs, probe)) countOpened(primaryName);
        return;
      }
      const { outcome } = /** @type {{ outcome: Outcome }} */ (result);
      counters.late.answered++;
      breaker?.succeeded();
      // A peek charged nothing: nothing to reconcile.
      if (decideOptions.peek === true || outcome.allowed === answered.allowed) {
        counters.late.agreed++;
      } else if (outcome.allowed) {
        // The object charged a request the chain denied: take the charge back.
        const back = typeof primaryRemote.takeBack === "function" ? await primaryRemote.takeBack(outcome) : { undone: 0, missed: outcome.checks.length };
        counters.late.undone += back.undone;
        counters.late.undoMissed += back.missed;
      } else {
        counters.late.admittedUncounted++;
      }
    });
    decideOptions.ctx?.waitUntil(done.catch(() => {}));
  }

  // No store consulted any check, so none has a decision of its own (null). Open admits, and what
  // is left is unknown (remaining 0 stands for "nothing promised"); closed denies until the retry.
  function failModeOutcome(checks, reason) {
    const allowed = failMode === "open";
    const retryAfterMs = allowed ? 0 : failClosedRetryAfterMs;
    return {
      allowed,
      limit: checks[0].rule.limit,
      remaining: 0,
      resetMs: retryAfterMs,
      retryAfterMs,
      decidingCheck: 0,
      checks: checks.map(() => null),
      store: "none",
      fallback: { from: primaryName, reason: `${reason}; failing ${failMode}`, weakened: allowed },
    };
  }

  // The tables every store of the chain may keep in the isolate (the memory budget counts them).
  function isolateTables(rule) {
    const tables = [];
    for (const store of [primary, kv, memory]) {
      if (store !== null && typeof store.isolateTables === "function") tables.push(...store.isolateTables(rule));
    }
    return tables;
  }

  /**
   * reset forgets the keys of `checks` in every store of the chain that may count them (a fallback
   * whose binding env lacks is passed over), and in the pre-filter's memory of denials.
   * @param {readonly StoreCheck[]} checks
   * @param {TimedStoreOptions} resetOptions
   * @returns {Promise<void>}
   */
  async function reset(checks, resetOptions) {
    denials?.forget(checks);
    const stores = /** @type {Store[]} */ ([primary, kv, memory].filter((store) => store !== null)).filter((store) => store.isBound?.(resetOptions.env) !== false);
    for (const store of stores) {
      if (typeof store.reset !== "function") throw new TypeError(`sluice: the ${store.name} store of this chain has no reset()`);
    }
    await Promise.all(stores.map((store) => /** @type {Required<Store>} */ (store).reset(checks, resetOptions)));
  }

  return { name: "chain", counters, decide, reset, isolateTables };
}

function checkStore(store, field, optional) {
  if (optional && store === null) return;
  if (store === null || typeof store !== "object" || typeof store.decide !== "function") {
    throw new SluiceConfigError(field, `must be a store (an object with decide(checks, options))${optional ? " or null" : ""}; got ${describe(store)}`);
  }
}

function describeFailure(name, error) {
  if (error instanceof DeadlineError) return `${name} timed out after ${error.timeoutMs} ms`;
  return `${name} failed: ${error?.message ?? String(error)}`;
}
