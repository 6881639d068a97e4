// The fallback chain: the primary store (the Durable Object) decides; when it throws or does not answer
// in time, KV decides if there is one, else the isolate's memory; when none can, `failMode` does.
// Every outcome says which store decided and, after a fallback, why.
//
// Every store of the chain has its own circuit breaker, so a request waits at most timeoutMs for each
// store whose breaker lets it be asked: at most (1 + fallbacks) x timeoutMs in all (100 ms with the
// defaults and a KV fallback; the memory store answers at once), and, once the breakers of failing
// stores are open, no wait on them at all until one request probes each after its cooldown.
import { SluiceConfigError, describe } from "../errors.js";
import { CircuitBreaker, checkBreakerOptions } from "./breaker.js";
import { DeadlineError, checkTimeout, withDeadline } from "./deadline.js";
import { DenialCache } from "./denial-cache.js";
import { DEFAULT_LOG_INTERVAL_MS, checkLogOptions, createThrottledLog } from "./throttled-log.js";

const FAIL_MODES = ["open", "closed"];
/** What happens when no store can answer, by default: admit. */
export const DEFAULT_FAIL_MODE = "open";
/** How long each store may take, by default: above a Durable Object's usual round trip in one location. */
export const DEFAULT_TIMEOUT_MS = 50;

/**
 * createFallbackChain returns a store made of others.
 *
 * - primary: the store that should decide (normally createDurableStore(...)). Required.
 * - kv: a store to decide when the primary cannot (normally createKvStore(...)). Optional.
 * - memory: the isolate's store, tried after kv. Optional: leave it out to go straight to failMode.
 *   A fallback store whose binding env lacks (store.isBound(env) false) is passed over, and the
 *   reason says so.
 * - failMode: "open" admits and "closed" denies when no store answers. Default "open".
 * - timeoutMs: how long each store may take before the next one is asked. Default 50.
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
 */
export function createFallbackChain(options = {}) {
  const {
    primary,
    kv = null,
    memory = null,
    failMode = DEFAULT_FAIL_MODE,
    timeoutMs = DEFAULT_TIMEOUT_MS,
    breaker: breakerOptions,
    failClosedRetryAfterMs = 1000,
    preFilter = true,
    preFilterMaxKeys = 10_000,
    log = console.warn,
    logIntervalMs = DEFAULT_LOG_INTERVAL_MS,
  } = options;
  checkStore(primary, "primary", false);
  checkStore(kv, "kv", true);
  checkStore(memory, "memory", true);
  if (!FAIL_MODES.includes(failMode)) throw new SluiceConfigError("failMode", `must be "open" or "closed"; got ${describe(failMode)}`);
  checkTimeout(timeoutMs, "timeoutMs");
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
  };
  const breakers = new Map(storeNames.map((name) => [name, breakerSettings === null ? null : new CircuitBreaker(breakerSettings)]));
  const breaker = breakers.get(primaryName);
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
    return decideInOrder(checks, decideOptions, nowMs);
  }

  async function decideInOrder(checks, decideOptions, nowMs) {
    const failures = [];
    const gate = breaker === null ? "closed" : breaker.admit(nowMs);
    if (gate === "open") {
      countSkip(primaryName);
      failures.push(`${primaryName} skipped: ${breaker.reason}`);
    } else {
      try {
        const outcome = await ask(primary, primaryName, checks, decideOptions);
        breaker?.succeeded();
        counters.decided[primaryName]++;
        if (denials !== null) denials.remember(checks, outcome, nowMs);
        return outcome;
      } catch (error) {
        if (breaker !== null && breaker.failed(nowMs, gate === "probe")) countOpened(primaryName);
        failures.push(describeFailure(primaryName, error));
      }
    }
    counters.fallbacks++;
    for (const [store, name] of fallbacks) {
      if (store.isBound?.(decideOptions.env) === false) {
        failures.push(`${name} not bound`);
        continue;
      }
      const storeBreaker = breakers.get(name);
      const storeGate = storeBreaker === null ? "closed" : storeBreaker.admit(nowMs);
      if (storeGate === "open") {
        countSkip(name);
        failures.push(`${name} skipped: ${storeBreaker.reason}`);
        continue;
      }
      try {
        const outcome = await ask(store, name, checks, decideOptions);
        storeBreaker?.succeeded();
        counters.decided[name]++;
        const reason = failures.join("; ");
        report(nowMs, `${reason}; decided by ${name}`);
        return { ...outcome, fallback: { from: primaryName, reason } };
      } catch (error) {
        if (storeBreaker !== null && storeBreaker.failed(nowMs, storeGate === "probe")) countOpened(name);
        failures.push(describeFailure(name, error));
      }
    }
    counters.decided.failMode++;
    const reason = failures.length > 0 ? failures.join("; ") : `${primaryName} failed`;
    report(nowMs, `${reason}; no store could decide, failing ${failMode}`);
    return failModeOutcome(checks, reason);
  }

  function countSkip(name) {
    counters.circuitSkipped++;
    counters.circuitSkippedBy[name]++;
  }
  function countOpened(name) {
    counters.circuitOpened++;
    counters.circuitOpenedBy[name]++;
  }

  // Calls a store, bounded by timeoutMs; counts its failures.
  async function ask(store, name, checks, decideOptions) {
    try {
      return await withDeadline(store.decide(checks, decideOptions), timeoutMs, name);
    } catch (error) {
      if (error instanceof DeadlineError) counters.timeouts[name]++;
      else counters.errors[name]++;
      throw error;
    }
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
      fallback: { from: primaryName, reason: `${reason}; failing ${failMode}` },
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

  return { name: "chain", counters, decide, isolateTables };
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
