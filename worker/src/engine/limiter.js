// The engine every surface shares (the Hono middleware and createLimiter for plain fetch handlers):
// options normalized once; per request, the dev bypass, `skip`, the keys and costs, then one
// all-or-nothing store call for all rules.
//
// With the memory store and synchronous key functions (the usual case) nothing in here awaits:
// evaluateNow returns the decision itself, and the public methods wrap it in the one promise they
// promise. A step that answers with a promise (a remote store, an async key) continues in a `then`.
import { bypassHeaders, decisionHeaders, policyHeader, withHeaders } from "../http/headers.js";
import { announceBypass, bypassApplies } from "./bypass.js";
import { effectiveMode } from "./mode.js";
import { countDecision } from "./isolate.js";
import { resolveKeyText, storeKey } from "../http/keys.js";
import { normalizeOptions } from "./options.js";
import { epochNow, limitedResponse } from "../http/responses.js";

/** @import { CommonOptions, LimiterSettings } from "./options.js" */
/** @import { NormalizedRule, Outcome, StoreCheck } from "../stores/store.js" */

/**
 * One request's checks, ready for the store: `keys` are the key texts before hashing.
 * @typedef {{ checks: StoreCheck[], keys: string[], checkedRules: readonly NormalizedRule[] }} PreparedChecks
 */

/**
 * A request that was checked: the store's outcome, with the rules and the keys it was counted under
 * (`keys`: the key text of each rule's check, before hashing; index-aligned with rules and checks).
 * `mode` is "shadow" when the limiter runs in shadow (or the key is outside its rollout): the request
 * is then allowed whatever the store decided, and `wouldDeny` says whether enforcing would have denied it.
 * @typedef {Outcome & {
 *   readonly mode: "enforce" | "shadow";
 *   readonly wouldDeny: boolean;
 *   bypassed: false;
 *   skipped: false;
 *   readonly rules: readonly NormalizedRule[];
 *   readonly keys: string[];
 * }} CheckedDecision
 */
/**
 * What only a checked decision carries, absent from a decision nothing counted: reading `remaining` of
 * c.get("rateLimit") gives a number, or undefined when the dev bypass let the request through.
 * @typedef {{ readonly [Field in Exclude<keyof CheckedDecision, "allowed" | "bypassed" | "skipped" | "rules">]?: undefined }} NothingCounted
 */
/**
 * A request let through by the dev bypass (the environment variable matched); nothing was counted.
 * @typedef {NothingCounted & { readonly allowed: true; readonly bypassed: true; readonly skipped: false; readonly rules: readonly NormalizedRule[] }} BypassedDecision
 */
/**
 * A request `skip` let through; nothing was counted.
 * @typedef {NothingCounted & { readonly allowed: true; readonly bypassed: false; readonly skipped: true; readonly rules: readonly NormalizedRule[] }} SkippedDecision
 */
/**
 * What a limiter decides for one request: checked (and charged if allowed), let through by the dev
 * bypass, or skipped.
 * @typedef {CheckedDecision | BypassedDecision | SkippedDecision} RateLimitDecision
 */
/**
 * createLimiter's options: key, cost and skip functions receive (request, env, ctx).
 * @template [Env=unknown]
 * @typedef {CommonOptions<[request: Request, env: Env, ctx: unknown]>} LimiterOptions
 */
/**
 * A limiter for a plain fetch handler.
 * @template [Env=unknown]
 * @typedef {object} Limiter
 * @property {readonly NormalizedRule[]} rules The rules with a fixed limit (a limit function's rules are in each decision).
 * @property {(request: Request, env?: Env, ctx?: unknown) => Promise<RateLimitDecision>} limit Decides `request` and
 *   charges it if every rule admits it.
 * @property {(decision: RateLimitDecision) => Array<[string, string]>} headers The rate-limit header fields a response to
 *   `decision` carries, as [name, value] pairs.
 * @property {(response: Response, decision: RateLimitDecision) => Response} withHeaders `response` with the rate-limit
 *   header fields of `decision` (a copy if its headers were immutable).
 * @property {(decision: CheckedDecision) => Response} limitedResponse The 429 for a denied decision: headers,
 *   Retry-After, cache-control: no-store, JSON body.
 * @property {(request: Request, env?: Env, ctx?: unknown) => Promise<RateLimitDecision>} peek The decision limit() would
 *   take for `request` now, charging nothing (skip and the dev bypass apply as in limit()).
 * @property {(request: Request, env?: Env, ctx?: unknown) => Promise<CheckedDecision>} get The counters of `request`'s keys
 *   as they stand: what a cost of 1 would get, charging nothing, whatever skip and the dev bypass say.
 * @property {(request: Request, env?: Env, ctx?: unknown) => Promise<void>} reset Forgets `request`'s keys in every rule
 *   of the limiter, in its store: they are back to their full quota.
 * @property {LimiterBlocks} blocks The blocks of its auto-blocking rules: list, lift, counters.
 */

const MAX_COST = 2 ** 31;
// The fields of a store's Outcome a decision passes on when present (stores/store.js, OutcomeFields).
const OPTIONAL_OUTCOME_FIELDS = /** @type {const} */ (["fallback", "lease", "preFiltered", "autoBlocked"]);

/**
 * @param {unknown} value
 * @returns {value is PromiseLike<any>}
 */
function isPromise(value) {
  return value !== null && typeof value === "object" && typeof (/** @type {{ then?: unknown }} */ (value)).then === "function";
}

// A cost function's answer: fractions round up (never under-charge); above 2^31 is clamped, which
// the core then denies as a request no bucket can ever hold. Anything else is a bug in the function.
/** @param {unknown} value @param {NormalizedRule} rule @returns {number} */
function requestCost(value, rule) {
  if (typeof value !== "number" || !(value >= 1)) {
    throw new TypeError(`sluice: the cost function of rule "${rule.name}" returned ${String(value)}; it must return a number >= 1`);
  }
  return Math.min(Math.ceil(value), MAX_COST);
}

// The injected or real clock, as the whole, non-negative milliseconds the core takes.
/** @param {() => number} clock @returns {number} */
function currentTime(clock) {
  const now = Math.floor(clock());
  if (!(now >= 0)) throw new RangeError(`sluice: clock() returned ${String(now)}; it must return milliseconds since the epoch`);
  return now;
}

/**
 * createEngine validates `options` for `surface` ("hono" or "fetch") and returns { settings, evaluate },
 * where evaluate(args, env, ctx) decides one request; `args` are what key, cost and skip functions
 * receive ([c] in Hono, [request, env, ctx] otherwise).
 * @param {unknown} options
 * @param {"hono" | "fetch" | "gateway"} surface
 */
export function createEngine(options, surface) {
  const settings = normalizeOptions(options, surface);
  const { entries, rules, store, clock, bypass, skip } = settings;
  /** @type {BypassedDecision} */
  const bypassed = Object.freeze({ allowed: true, bypassed: true, skipped: false, rules });
  /** @type {SkippedDecision} */
  const skipped = Object.freeze({ allowed: true, bypassed: false, skipped: true, rules });
  const count = entries.length;
  // The request's URL, for the dev bypass: the middleware's argument is Hono's context.
  /** @param {readonly any[]} args @returns {string | undefined} */
  const requestUrl = surface === "hono" ? (/** @type {readonly any[]} */ args) => args[0]?.req?.url : (/** @type {readonly any[]} */ args) => args[0]?.url;

  /**
   * evaluateNow decides one request as evaluate does, and returns the decision itself when every step
   * was synchronous (the memory store, synchronous key, cost and skip functions, no live overrides), a
   * promise of it otherwise. The replay (worker/cli/replay) decides a million logged requests this way
   * without a promise each; evaluate is this behind one await.
   * @param {readonly unknown[]} args
   * @param {any} env
   * @param {any} ctx
   * @param {boolean} [peek] Decide without charging (and without counting the decision).
   * @returns {RateLimitDecision | Promise<RateLimitDecision>}
   */
  function evaluateNow(args, env, ctx, peek = false) {
    // Only the Worker's environment switches limiting off, and only for a request to a loopback host
    // (bypass.js): nothing else in the request is consulted. The store's bindings are checked anyway.
    if (bypass !== null && bypassApplies(bypass, env, () => requestUrl(args))) {
      store.checkBindings?.(env);
      announceBypass(bypass);
      if (!peek) countDecision(bypassed);
      return bypassed;
    }
    if (skip !== undefined) {
      const skipping = skip(...args);
      if (isPromise(skipping)) return Promise.resolve(skipping).then((yes) => (yes ? skipped : refreshThenCheck(args, env, ctx, peek)));
      if (skipping) return skipped;
    }
    return refreshThenCheck(args, env, ctx, peek);
  }

  /**
   * @param {readonly unknown[]} args
   * @param {any} env
   * @param {any} ctx
   * @param {boolean} [peek]
   * @returns {Promise<RateLimitDecision>}
   */
  async function evaluate(args, env, ctx, peek = false) {
    return evaluateNow(args, env, ctx, peek);
  }

  // A limiter of one rule with a fixed cost and limit (the usual one) needs none of the lists prepare()
  // builds for several rules or for functions of the request: its request goes to charge() with its key.
  const entry = entries[0];
  const oneFixedRule = count === 1 && !settings.dynamic && typeof entry.cost === "number" && entry.limitOf === undefined;

  /** @param {string} keyText @param {any} env @param {any} ctx @param {boolean} peek */
  function chargeOne(keyText, env, ctx, peek) {
    const key = storeKey(keyText);
    /** @param {string} stored */
    const ready = (stored) => charge({ checks: [{ rule: entry.rule, key: stored, cost: /** @type {number} */ (entry.cost) }], keys: [keyText], checkedRules: rules }, env, ctx, peek);
    return isPromise(key) ? key.then(ready) : ready(key);
  }

  // Live overrides (features/overrides/live.js): a copy older than its refreshMs is fetched first.
  /** @param {readonly unknown[]} args @param {any} env @param {any} ctx @param {boolean} peek */
  function refreshThenCheck(args, env, ctx, peek) {
    if (settings.liveTables.length === 0) return check(args, env, ctx, peek);
    return (async () => {
      for (const live of settings.liveTables) await live.refresh(env, currentTime(clock));
      return check(args, env, ctx, peek);
    })();
  }

  /** @param {readonly unknown[]} args @param {any} env @param {any} ctx @param {boolean} peek */
  function check(args, env, ctx, peek) {
    if (oneFixedRule) {
      const keyText = resolveKeyText(entry.key, args);
      return isPromise(keyText) ? keyText.then((text) => chargeOne(text, env, ctx, peek)) : chargeOne(keyText, env, ctx, peek);
    }
    const prepared = prepare(args, false);
    return isPromise(prepared) ? prepared.then((ready) => charge(ready, env, ctx, peek)) : charge(prepared, env, ctx, peek);
  }

  // The one all-or-nothing store call, at the time the keys were ready, then the decision counted.
  /** @param {PreparedChecks} prepared @param {any} env @param {any} ctx @param {boolean} peek */
  function charge({ checks, keys, checkedRules }, env, ctx, peek) {
    /** @param {Outcome} outcome */
    const conclude = (outcome) => {
      const decision = decide(outcome, checkedRules, keys);
      if (!peek) {
        countDecision(decision);
        // The accuracy probe compares what was decided with exact counting, in the background.
        settings.accuracy?.observe(checks, outcome, env, ctx);
      }
      return decision;
    };
    const options = { nowMs: currentTime(clock), env, ctx, peek };
    // Auto-blocking (features/auto-block/) decides around the store call: a blocked key first, strikes after.
    if (settings.autoBlock !== null) return settings.autoBlock.decide(store, checks, keys, options, conclude);
    const outcome = store.decide(checks, options);
    return isPromise(outcome) ? Promise.resolve(outcome).then(conclude) : conclude(outcome);
  }

  /**
   * The checks of one request: each rule (its limit resolved) with its key and cost. `unitCost` asks
   * for a cost of 1 whatever the cost option says (get and reset). A promise only when a key, cost or
   * limit function answered with one, or a long key is hashed.
   * @param {readonly unknown[]} args
   * @param {boolean} unitCost
   * @returns {PreparedChecks | Promise<PreparedChecks>}
   */
  function prepare(args, unitCost) {
    /** @type {any[]} */
    const keys = new Array(count);
    /** @type {any[]} */
    const costs = new Array(count);
    /** @type {any[]} */
    const limits = new Array(count);
    let pending = false;
    for (let i = 0; i < count; i++) {
      const entry = entries[i];
      // Rules that inherited one key function share its answer.
      let j = 0;
      while (j < i && entries[j].key !== entry.key) j++;
      keys[i] = j < i ? keys[j] : resolveKeyText(entry.key, args);
      costs[i] = unitCost || typeof entry.cost === "number" ? (unitCost ? 1 : entry.cost) : entry.cost(...args);
      limits[i] = entry.limitOf === undefined ? undefined : entry.limitOf(...args);
      pending = pending || isPromise(keys[i]) || isPromise(costs[i]) || isPromise(limits[i]);
    }
    if (!pending) return checksOf(keys, costs, limits, unitCost);
    return Promise.all([Promise.all(keys), Promise.all(costs), Promise.all(limits)]).then(([resolvedKeys, resolvedCosts, resolvedLimits]) =>
      checksOf(resolvedKeys, resolvedCosts, resolvedLimits, unitCost),
    );
  }

  /**
   * Each rule's check from the resolved keys, costs and limits (a promise only while a long key hashes).
   * @param {any[]} keys @param {any[]} costs @param {any[]} limits @param {boolean} unitCost
   * @returns {PreparedChecks | Promise<PreparedChecks>}
   */
  function checksOf(keys, costs, limits, unitCost) {
    /** @type {StoreCheck[]} */
    const checks = new Array(count);
    let hashing = false;
    for (let i = 0; i < count; i++) {
      const entry = entries[i];
      let rule = entry.limitOf === undefined ? entry.rule : entry.resolve(limits[i]);
      // An override for this key (features/overrides/overrides.js): its limit's rule, made at construction.
      if (entry.overrideOf !== undefined) {
        const overridden = entry.overrideOf(keys[i]);
        if (overridden !== undefined) rule = entry.resolve(overridden);
      }
      const key = storeKey(keys[i]);
      hashing = hashing || isPromise(key);
      checks[i] = { rule, key: /** @type {string} */ (key), cost: unitCost || typeof entry.cost === "number" ? costs[i] : requestCost(costs[i], rule) };
    }
    const checkedRules = settings.dynamic ? Object.freeze(checks.map((check) => check.rule)) : rules;
    if (!hashing) return { checks, keys, checkedRules };
    return Promise.all(checks.map((check) => check.key)).then((hashed) => {
      for (let i = 0; i < count; i++) checks[i].key = hashed[i];
      return { checks, keys, checkedRules };
    });
  }

  /**
   * The decision of an outcome, in the limiter's mode: a shadowed denial is let through (allowed, with
   * wouldDeny), as the gateway's shadow rules are (gateway/mode.js decides which keys a rollout enforces).
   * @param {Outcome} outcome
   * @param {readonly NormalizedRule[]} checkedRules
   * @param {string[]} keys
   * @returns {CheckedDecision}
   */
  function decide(outcome, checkedRules, keys) {
    const mode = settings.mode === "enforce" && settings.rollout >= 1 ? "enforce" : /** @type {"enforce" | "shadow"} */ (effectiveMode({ name: checkedRules[0].name, mode: settings.mode, rollout: settings.rollout }, keys[0]));
    // Field by field, not `{ ...outcome, mode, ... }`: V8 in Node 20 builds a new hidden class for
    // every spread that adds properties, 10-80 us a decision under load (bench/replay.js, where this
    // one line took a quarter of the CPU and most of the garbage collection).
    /** @type {any} */
    const decision = {
      allowed: mode === "shadow" ? true : outcome.allowed,
      limit: outcome.limit,
      remaining: outcome.remaining,
      resetMs: outcome.resetMs,
      retryAfterMs: outcome.retryAfterMs,
      decidingCheck: outcome.decidingCheck,
      checks: outcome.checks,
      store: outcome.store,
      mode,
      wouldDeny: !outcome.allowed,
      bypassed: false,
      skipped: false,
      rules: checkedRules,
      keys,
    };
    // The optional fields the Outcome type documents (stores/store.js) pass through, each by name: a
    // for...in over the outcome cost a tenth of a memory decision (bench/replay.js), and would pass on
    // whatever else a store left on it.
    for (const name of OPTIONAL_OUTCOME_FIELDS) if (outcome[name] !== undefined) decision[name] = outcome[name];
    return decision;
  }

  /**
   * The counters of a request's keys, as they stand: a cost of 1 peeked, whatever skip, the dev bypass
   * and the cost option say. Charges nothing.
   * @param {readonly unknown[]} args
   * @param {any} env
   * @param {any} ctx
   * @returns {Promise<CheckedDecision>}
   */
  async function get(args, env, ctx) {
    const { checks, keys, checkedRules } = await prepare(args, true);
    const outcome = await store.decide(checks, { nowMs: currentTime(clock), env, ctx, peek: true });
    return decide(outcome, checkedRules, keys);
  }

  /**
   * Forgets a request's keys in every rule: they are back to their full quota.
   * @param {readonly unknown[]} args
   * @param {any} env
   * @param {any} ctx
   * @returns {Promise<void>}
   */
  async function reset(args, env, ctx) {
    if (typeof store.reset !== "function") throw new TypeError(`sluice: the ${store.name} store has no reset(checks, options)`);
    const { checks } = await prepare(args, true);
    await store.reset(checks, { nowMs: currentTime(clock), env, ctx });
  }

  return { settings, evaluate, evaluateNow, get, reset, blocks: settings.autoBlock?.blocks(store, () => currentTime(clock)) ?? NO_BLOCKS };
}

/**
 * The blocks of a limiter's auto-blocking rules (features/auto-block/): what an admin API lists and lifts.
 * @typedef {object} LimiterBlocks
 * @property {(env?: unknown) => Promise<import("../features/auto-block/auto-block.js").BlockEntry[]>} list The blocks in force, ending
 *   soonest first: on the durable and Redis stores the deployment's (the store's list, which every isolate notes the blocks it
 *   starts or meets in), on memory this isolate's; `env` is where a store's binding is looked up.
 * @property {(rule: string, key: string, env?: unknown, ctx?: unknown) => Promise<boolean>} lift Ends the block of `key` (as the rule's
 *   key function gives it, "ip:192.0.2.1") under the auto-blocking rule named `rule`, in the store, and forgets its strikes; false
 *   when no rule of that name auto-blocks.
 * @property {() => Array<{ rule: string } & import("../features/auto-block/auto-block.js").AutoBlockCounters>} counters Each
 *   auto-blocking rule's counters in this isolate.
 */

/** A limiter without auto-blocking rules has no blocks. @type {LimiterBlocks} */
const NO_BLOCKS = Object.freeze({ list: async () => [], lift: async () => false, counters: () => [] });

/**
 * responseHeaders lists the [name, value] pairs a response to `decision` carries.
 * @param {RateLimitDecision} decision
 * @param {LimiterSettings} settings
 * @returns {Array<[string, string]>}
 */
export function responseHeaders(decision, settings) {
  if (decision.bypassed) return bypassHeaders();
  if (decision.skipped) return [];
  const pairs = decisionHeaders(decision, settings.headers, settings.dynamic ? policyHeader(decision.rules) : settings.policy, epochNow(settings));
  // A shadowed decision says so, and whether enforcing would have denied it.
  if (decision.mode === "shadow" && settings.headers !== "none") pairs.push(["X-RateLimit-Shadow", decision.wouldDeny ? "would-deny" : "allow"]);
  return pairs;
}

/**
 * createLimiter builds a limiter for a plain fetch handler (no framework):
 *
 *   const limiter = createLimiter({ key: ip(), limit: 10, windowSec: 60 });
 *   const decision = await limiter.limit(request, env, ctx);
 *   if (!decision.allowed) return limiter.limitedResponse(decision);
 *   return limiter.withHeaders(await handle(request), decision);
 *
 * Key, cost and skip functions receive (request, env, ctx). Configuration errors throw here.
 * @template [Env=unknown]
 * @param {LimiterOptions<Env>} config
 * @returns {Limiter<Env>}
 */
export function createLimiter(config) {
  return buildLimiter(config, "fetch");
}

/**
 * createGatewayLimiter is createLimiter for the gateway (gateway/limiter.js), whose rules keep falling
 * back, as counted fallbacks, when their store's binding is missing from env (createLimiter refuses
 * that with a SluiceConfigError).
 * @param {LimiterOptions} config
 * @returns {Limiter}
 */
export function createGatewayLimiter(config) {
  return buildLimiter(config, "gateway");
}

/**
 * @template [Env=unknown]
 * @param {LimiterOptions<Env>} config
 * @param {"fetch" | "gateway"} surface
 * @returns {Limiter<Env>}
 */
function buildLimiter(config, surface) {
  const { settings, evaluate, get, reset, blocks } = createEngine(config, surface);
  return Object.freeze({
    blocks,
    rules: settings.rules,
    /** limit decides `request` and charges it if every rule admits it. */
    limit(request, env, ctx) {
      return evaluate([request, env, ctx], env, ctx);
    },
    /** headers lists the rate-limit header fields a response to `decision` carries. */
    headers(decision) {
      return responseHeaders(decision, settings);
    },
    /** withHeaders returns `response` carrying the rate-limit header fields of `decision`. */
    withHeaders(response, decision) {
      return withHeaders(response, responseHeaders(decision, settings));
    },
    /** peek is the decision limit() would take for `request` now, charging nothing. */
    peek(request, env, ctx) {
      return evaluate([request, env, ctx], env, ctx, true);
    },
    /** get reports the counters of `request`'s keys (a cost of 1, peeked), whatever skip and the bypass say. */
    get(request, env, ctx) {
      return get([request, env, ctx], env, ctx);
    },
    /** reset forgets `request`'s keys in every rule: they are back to their full quota. */
    reset(request, env, ctx) {
      return reset([request, env, ctx], env, ctx);
    },
    /** limitedResponse is the 429 for a denied `decision`. */
    limitedResponse(decision) {
      return limitedResponse(decision, settings);
    },
  });
}
