// Options of rateLimit() and createLimiter(), validated and normalized once, at construction. Every
// mistake throws a SluiceConfigError naming the option; nothing here is left to fail per request.
import { ALGORITHMS, MAX_CHECKS_PER_CALL, SluiceError } from "../../../wasm-bindings/core-base.js";
import { normalizeBypass } from "./bypass.js";
import { suggestion } from "./peer-options.js";
import { nowMs } from "./clock.js";
import { SluiceConfigError, describe } from "./errors.js";
import { HEADER_MODES, policyHeader } from "../http/headers.js";
import { declareTables, slotBytes, tableBytes, validateRule } from "./isolate.js";
import { toKeyFunction } from "../http/keys.js";
import { STORE_FIELDS, resolveStore, storeName } from "../stores/registry.js";
import { overrideListNormalizer } from "../features/overrides/overrides.js";
import { isLiveTable } from "../features/overrides/live.js";

/** @import { AlgorithmName } from "../../../wasm-bindings/core-base.js" */
/** @import { KeyFunction, KeySource } from "../http/keys.js" */
/** @import { LimiterStoreOptions } from "../stores/registry.js" */
/** @import { NormalizedRule, Store } from "../stores/store.js" */
/** @import { AccuracyProbe } from "../features/accuracy/probe.js" */
/** @typedef {ReturnType<typeof import("../features/overrides/live.js").liveOverrides>} LiveTable */

/** @typedef {"legacy" | "draft" | "draft-6" | "draft-7" | "draft-8" | "both" | "none"} HeaderMode */
/**
 * A limit that depends on the request (a plan: free, pro, enterprise), given what key functions receive.
 * @template {unknown[]} [Args=unknown[]]
 * @typedef {(...args: Args) => number | Promise<number>} LimitFunction
 */

/**
 * What a rule may set besides its quota and key. `Args` are what key and cost functions receive.
 * @template {unknown[]} Args
 * @typedef {object} RuleFields
 * @property {string} [name] The policy's name in headers and its counters' id; default "<limit>-per-<window>s".
 *   Rules with the same name, algorithm, limit, window and burst share counters.
 * @property {AlgorithmName} [algorithm] Default "sliding-counter".
 * @property {number} [burst] Bucket capacity (token-bucket, leaky-bucket, gcra); default limit, or ceil(rate) with `rate`.
 * @property {number | ((...args: Args) => number | Promise<number>)} [cost] What a request costs; default 1. A function's fractions round up.
 * @property {number} [keyCapacity] Keys the rule's table holds before evicting the least used; default 50,000 (fewer for big sliding logs).
 * @property {boolean} [countDenied] sliding-counter only: denied requests count too (Cloudflare's counter); not with store "kv". Default false.
 * @property {number} [blockSec] Block duration: a key that exceeds the rule is denied every request for this long (or until its
 *   quota would be whole again, if later), then starts at its full quota. Default: no block, only the excess is denied.
 *   Not with countDenied, store "kv" or leases. Give at most one of blockSec and blockMs.
 * @property {number} [blockMs] The block duration in milliseconds (see blockSec).
 * @property {import("../features/overrides/overrides.js").OverrideList | ReturnType<typeof import("../features/overrides/live.js").liveOverrides>} [overrides]
 *   Per-key limits: overrideList([...]) with `{ key, limit }` for an exact key, `{ prefix, limit }` for keys starting with
 *   it, as the rule's key function produces them (the exact key wins, then the longest prefix); or liveOverrides(), a
 *   table changed without a redeploy. Each distinct limit counts apart. Not with a limit function.
 */

/**
 * A rule's quota: `limit` requests per window, the window given as exactly one of windowSec and
 * windowMs; or, for the buckets, `rate` requests per second instead of all three.
 * `limit` may be a function of the request (sync or async) for plans: each distinct value it returns
 * is a rule of its own (validated like a configured limit; at most MAX_LIMIT_VALUES per rule).
 * @template {unknown[]} [Args=unknown[]]
 * @typedef {{ limit: number | LimitFunction<Args>; windowSec: number; windowMs?: undefined; rate?: undefined }
 *   | { limit: number | LimitFunction<Args>; windowMs: number; windowSec?: undefined; rate?: undefined }
 *   | { rate: number; limit?: undefined; windowSec?: undefined; windowMs?: undefined }} RuleQuota
 */

/**
 * A rule's key: required, in the rule or (with `rules`) at the top level.
 * @template {unknown[]} Args
 * @typedef {object} RuleKey
 * @property {KeySource<Args>} key
 */

/**
 * One rule of `rules`: its quota, its other fields and its key, unless the top level gives it.
 * @template {unknown[]} [Args=any[]]
 * @typedef {RuleFields<Args> & RuleQuota<Args> & Partial<RuleKey<Args>>} RuleOptions
 */

/**
 * The options that shape responses and decide who is limited, whatever the rules.
 * @template {unknown[]} Args
 * @typedef {object} ResponseOptions
 * @property {string | number} [code] The body's "code" on a 429; default "rate_limited".
 * @property {(...args: Args) => boolean | Promise<boolean>} [skip] True lets the request through, unlimited and without headers.
 * @property {HeaderMode} [headers] Which rate-limit header fields responses carry (docs/headers.md): "legacy"
 *   (X-RateLimit-*), "draft" or "draft-8" (RateLimit-Policy and RateLimit, named), "draft-6", "draft-7", "both"
 *   (legacy and draft) or "none". Default "both".
 * @property {"seconds" | "epoch"} [legacyReset] X-RateLimit-Reset as seconds from now ("seconds", the default) or as the
 *   Unix time in seconds ("epoch", as GitHub and express-rate-limit send it).
 * @property {boolean} [problemJson] Answer 429s as application/problem+json (quota-exceeded, with violated-policies). Default false.
 * @property {false | { variable?: string; value?: string }} [bypass] The environment variable that switches limiting off;
 *   default { variable: "ENV", value: "dev" }; false: never.
 * @property {() => number} [clock] Milliseconds since the epoch; default the wall clock. For tests.
 * @property {"enforce" | "shadow"} [mode] "shadow" counts and reports but never denies (decision.mode says
 *   "shadow", decision.wouldDeny what enforcing would have done). Default "enforce".
 * @property {number} [rollout] With mode "enforce": the share of keys enforced, from 0 to 1; the rest run in
 *   shadow. Which keys is stable (a hash of the first rule's name and key), as in the gateway. Default 1.
 * @property {import("../features/accuracy/probe.js").AccuracyProbe} [accuracy] A probe from accuracyProbe({ sample }): checks a
 *   share of the keys against exact counting in the background and counts how often this limiter agreed (docs/accuracy.md).
 */

/**
 * The fields a rule of `rules` takes from the top level when it leaves them out.
 * @template {unknown[]} Args
 * @typedef {Pick<RuleFields<Args>, "algorithm" | "cost" | "keyCapacity">} Inherited
 */
/**
 * Beside `rules`, the fields only a rule has are refused (give them inside each rule).
 * @typedef {{ [Field in "name" | "burst" | "limit" | "windowSec" | "windowMs" | "rate"]?: undefined }} OwnedByRules
 */

/**
 * The rules of a limiter: one rule at the top level, or 1 to 16 in `rules` (checked in one
 * all-or-nothing call; they inherit key, algorithm, cost, keyCapacity); every rule has a key.
 * @template {unknown[]} Args
 * @typedef {(RuleFields<Args> & RuleQuota<Args> & RuleKey<Args> & { rules?: undefined })
 *   | (Inherited<Args> & OwnedByRules & (
 *       (RuleKey<Args> & { rules: ReadonlyArray<RuleOptions<Args>> })
 *       | { key?: undefined; rules: ReadonlyArray<RuleFields<Args> & RuleQuota<Args> & RuleKey<Args>> }))} RulesOptions
 */

/**
 * The options of a limiter or middleware: its rules, its responses and its store.
 * @template {unknown[]} Args
 * @typedef {ResponseOptions<Args> & LimiterStoreOptions & RulesOptions<Args>} CommonOptions
 */

/**
 * A rule of a limiter, normalized: what it counts, its key function and its cost.
 * @typedef {object} RuleEntry
 * @property {NormalizedRule} rule The rule; for a limit function, the rule as validated with a limit of 1.
 * @property {LimitFunction<any[]> | undefined} limitOf The limit function, if the limit is one.
 * @property {(value: unknown) => NormalizedRule} resolve The rule for a value the limit function returned.
 * @property {((keyText: unknown) => number | undefined) | undefined} overrideOf The limit an override gives a key, if the rule has overrides.
 * @property {KeyFunction} key
 * @property {number | ((...args: any[]) => number | Promise<number>)} cost
 */

/**
 * What normalizeOptions makes of a limiter's or middleware's options.
 * @typedef {object} LimiterSettings
 * @property {readonly RuleEntry[]} entries
 * @property {readonly NormalizedRule[]} rules
 * @property {string} policy
 * @property {string | number} code
 * @property {((...args: any[]) => boolean | Promise<boolean>) | undefined} skip
 * @property {((...args: any[]) => any) | undefined} onLimited
 * @property {HeaderMode} headers
 * @property {"seconds" | "epoch"} legacyReset
 * @property {boolean} problemJson
 * @property {Store} store
 * @property {Readonly<{ variable: string; value: string }> | null} bypass
 * @property {() => number} clock
 * @property {"enforce" | "shadow"} mode
 * @property {number} rollout
 * @property {boolean} dynamic Whether some rule's limit is a function (the policy header is then per decision).
 * @property {ReadonlyArray<ReturnType<typeof import("../features/overrides/live.js").liveOverrides>>} liveTables The live tables of overrides the rules read.
 * @property {import("../features/accuracy/probe.js").AccuracyProbe | null} accuracy
 */

/**
 * The algorithm of a rule that names none: smooth like a log, constant memory like a window.
 * @type {AlgorithmName}
 */
export const DEFAULT_ALGORITHM = "sliding-counter";
/** Keys a rule's table holds by default (it evicts the least used key beyond that). */
export const DEFAULT_KEY_CAPACITY = 50_000;
/** A default-sized table stays within this; sliding-log rules with large limits get fewer keys. */
export const DEFAULT_TABLE_BYTES = 4 * 1024 * 1024;
/** The most any one rule's table may take when keyCapacity is given. */
export const MAX_TABLE_BYTES = 32 * 1024 * 1024;
// Below this many keys a default table would limit poorly (evictions forget busy clients).
const MIN_DEFAULT_KEYS = 100;
const MAX_COST = 2 ** 31;
export const DEFAULT_CODE = "rate_limited";

const BUCKETS = new Set(["token-bucket", "leaky-bucket", "gcra"]);
// Printable ASCII without '"' and '\' (the name is a structured-field string) and '|' (the id's separator).
const RULE_NAME = /^[\x20-\x21\x23-\x5b\x5d-\x7b\x7d-\x7e]{1,64}$/;
const RULE_FIELDS = ["name", "key", "limit", "windowSec", "windowMs", "algorithm", "burst", "rate", "cost", "keyCapacity", "countDenied", "blockSec", "blockMs", "overrides"];
// Fields a rule inherits from the top level when `rules` is given.
const INHERITED_FIELDS = ["key", "algorithm", "cost", "keyCapacity"];
const LIMITER_FIELDS = ["rules", "code", "skip", "headers", "legacyReset", "problemJson", ...STORE_FIELDS, "bypass", "clock", "mode", "rollout", "accuracy"];
/** The most distinct values one rule's limit function may return (each is a rule in the core, which holds 64). */
export const MAX_LIMIT_VALUES = 8;
/**
 * The most limiters without a `name` one isolate may build. Each counts on its own (its rules' ids carry
 * the order it was built in), which is stable when limiters are built at module scope; a limiter built
 * per request would start from zero every time, so building hundreds of them is refused.
 */
export const MAX_UNNAMED_LIMITERS = 256;
let unnamedLimiters = 0;
const MIDDLEWARE_FIELDS = [...LIMITER_FIELDS, "onLimited"];

/** isPlainObject: an options object (not null, not an array). @param {unknown} value @returns {value is Record<string, any>} */
export function isPlainObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * refuseUnknown throws a SluiceConfigError naming the first field of `object` not in `known`, and what
 * to write instead when it is a known option in the wrong case or another rate limiter's spelling.
 * @param {object} object
 * @param {readonly string[]} known
 * @param {string} where
 */
export function refuseUnknown(object, known, where) {
  for (const field of Object.keys(object)) {
    if (!known.includes(field)) {
      const instead = suggestion(field, known);
      const hint = instead === undefined ? "" : `; did you mean ${instead}?`;
      throw new SluiceConfigError(`${where}${field}`, `is not an option${hint} (known: ${known.join(", ")})`);
    }
  }
}

/**
 * wholeNumber returns `value` if it is a whole number from min to max, else throws naming `field`.
 * @param {unknown} value @param {string} field @param {number} min @param {number} max
 * @returns {number}
 */
export function wholeNumber(value, field, min, max) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new SluiceConfigError(field, `must be a whole number from ${min} to ${max}; got ${describe(value)}`);
  }
  return value;
}

// The sustained rate `rate` (per second, up to 3 decimals) as an exact limit per window.
/** @param {unknown} rate @param {string} field @returns {{ limit: number, windowMs: number }} */
function rateAsLimit(rate, field) {
  if (typeof rate !== "number" || !Number.isFinite(rate) || rate <= 0) {
    throw new SluiceConfigError(field, `must be a positive number of requests per second; got ${describe(rate)}`);
  }
  for (const seconds of [1, 10, 100, 1000]) {
    const limit = Math.round(rate * seconds);
    if (Math.abs(limit - rate * seconds) < 1e-9 * seconds && limit >= 1) return { limit, windowMs: seconds * 1000 };
  }
  throw new SluiceConfigError(field, `must have at most 3 decimals; got ${describe(rate)}`);
}

/** @param {unknown} windowSec @param {string} field @returns {number} */
function windowAsMs(windowSec, field) {
  if (typeof windowSec !== "number" || !Number.isFinite(windowSec) || windowSec <= 0) {
    throw new SluiceConfigError(field, `must be a positive number of seconds; got ${describe(windowSec)}`);
  }
  const windowMs = Math.round(windowSec * 1000);
  if (windowMs < 1 || Math.abs(windowMs - windowSec * 1000) > 1e-6) {
    throw new SluiceConfigError(field, `must be a whole number of milliseconds (in seconds: ${describe(windowSec)})`);
  }
  return windowMs;
}

/** @param {AlgorithmName} algorithm @param {number} limit @param {string} path @returns {number} */
function defaultKeyCapacity(algorithm, limit, path) {
  const perSlot = slotBytes(algorithm, limit);
  // Slots hold keys at 90 % load; step down past the rounding of slots to whole buckets.
  let capacity = Math.min(DEFAULT_KEY_CAPACITY, Math.floor((DEFAULT_TABLE_BYTES / perSlot) * 0.9));
  while (capacity > 0 && tableBytes(algorithm, limit, capacity) > DEFAULT_TABLE_BYTES) capacity--;
  if (capacity < MIN_DEFAULT_KEYS) {
    throw new SluiceConfigError(
      `${path}limit`,
      `${limit} with algorithm 'sliding-log' keeps ${limit} timestamps per key: a default table would hold only ${capacity} keys. ` +
        "Use 'sliding-counter', or set keyCapacity explicitly.",
    );
  }
  return capacity;
}

// The core's name for a refused field, as this rule's options spell it.
/** @param {string} coreField @param {Record<string, unknown>} spec @returns {string} */
function userField(coreField, spec) {
  if (coreField === "windowMs") {
    if (spec.rate !== undefined) return "rate";
    return spec.windowMs !== undefined ? "windowMs" : "windowSec";
  }
  if (coreField === "limit" && spec.rate !== undefined) return "rate";
  if (coreField === "blockMs") return spec.blockMs !== undefined ? "blockMs" : "blockSec";
  return coreField;
}

// The block duration in milliseconds, from blockSec (whole milliseconds) or blockMs, at most one of them;
// 0 when neither is given (throttling). Its upper bound is the core's (validateRule).
/** @param {Record<string, any>} spec The rule as given (checked here). @param {string} path @returns {number} */
function ruleBlockMs(spec, path) {
  if (spec.blockMs !== undefined) {
    if (spec.blockSec !== undefined) throw new SluiceConfigError(`${path}blockMs`, "cannot be given with blockSec: give one of them");
    if (!Number.isSafeInteger(spec.blockMs) || spec.blockMs < 1) {
      throw new SluiceConfigError(`${path}blockMs`, `must be a whole number of milliseconds, at least 1; got ${describe(spec.blockMs)}`);
    }
    return spec.blockMs;
  }
  if (spec.blockSec === undefined) return 0;
  return windowAsMs(spec.blockSec, `${path}blockSec`);
}

// The window in milliseconds, from windowSec (whole milliseconds) or windowMs, exactly one of them.
/** @param {Record<string, any>} spec The rule as given (checked here). @param {string} path @returns {number} */
function ruleWindowMs(spec, path) {
  if (spec.windowMs !== undefined) {
    if (spec.windowSec !== undefined) throw new SluiceConfigError(`${path}windowMs`, "cannot be given with windowSec: give one of them");
    // Its upper bound is the core's (validateRule below).
    const { windowMs } = spec;
    if (!Number.isSafeInteger(windowMs) || windowMs < 1) {
      throw new SluiceConfigError(`${path}windowMs`, `must be a whole number of milliseconds, at least 1; got ${describe(windowMs)}`);
    }
    return windowMs;
  }
  if (spec.windowSec === undefined) throw new SluiceConfigError(`${path}windowSec`, "is missing: how many seconds is the window (or windowMs: milliseconds)?");
  return windowAsMs(spec.windowSec, `${path}windowSec`);
}

/**
 * normalizeRuleSpec validates what a rule counts — its algorithm, limit and window (or rate), burst,
 * name and key capacity — and returns the NormalizedRule; `path` prefixes the fields named in errors
 * ("rules[1]." gives "rules[1].limit"). Every bound is checked here or by the core itself, so anything
 * that takes rules (the middleware, createLimiter, the gateway's configuration) validates them alike.
 * `instance` (a limiter's build order) goes into the id of a rule without a name: such rules count
 * per limiter; a rule with a name shares its counts with every rule of that name and quota.
 * @param {Record<string, any>} spec
 * @param {string} [path]
 * @param {number} [instance]
 * @returns {NormalizedRule}
 */
export function normalizeRuleSpec(spec, path = "", instance = undefined) {
  const algorithm = spec.algorithm ?? DEFAULT_ALGORITHM;
  if (!ALGORITHMS.includes(algorithm)) {
    throw new SluiceConfigError(`${path}algorithm`, `must be one of ${ALGORITHMS.join(", ")}; got ${describe(algorithm)}`);
  }
  const isBucket = BUCKETS.has(algorithm);

  let limit;
  let windowMs;
  let burst = 0;
  if (spec.rate !== undefined) {
    if (!isBucket) throw new SluiceConfigError(`${path}rate`, `applies to token-bucket, leaky-bucket and gcra, not ${algorithm}`);
    for (const field of ["limit", "windowSec", "windowMs"]) {
      if (spec[field] !== undefined) throw new SluiceConfigError(`${path}${field}`, "cannot be given with rate: give rate, or limit and windowSec");
    }
    ({ limit, windowMs } = rateAsLimit(spec.rate, `${path}rate`));
    // A bucket filled at `rate` per second holds one second's worth unless told otherwise.
    burst = Math.max(1, Math.ceil(spec.rate));
  } else {
    if (spec.limit === undefined) throw new SluiceConfigError(`${path}limit`, "is missing: how many requests per window?");
    limit = wholeNumber(spec.limit, `${path}limit`, 1, MAX_COST);
    windowMs = ruleWindowMs(spec, path);
  }
  if (spec.burst !== undefined) {
    if (!isBucket) throw new SluiceConfigError(`${path}burst`, `applies to token-bucket, leaky-bucket and gcra, not ${algorithm}`);
    burst = wholeNumber(spec.burst, `${path}burst`, 1, MAX_COST);
  }

  // sliding-counter only: denied requests count too (Cloudflare's counter), so a client that keeps
  // sending while limited stays limited.
  const countDenied = spec.countDenied ?? false;
  if (typeof countDenied !== "boolean") throw new SluiceConfigError(`${path}countDenied`, `must be true or false; got ${describe(countDenied)}`);
  if (countDenied && algorithm !== "sliding-counter") {
    throw new SluiceConfigError(`${path}countDenied`, `applies to sliding-counter only, not ${algorithm}`);
  }

  const blockMs = ruleBlockMs(spec, path);
  if (blockMs > 0 && countDenied) {
    throw new SluiceConfigError(`${path}${spec.blockMs !== undefined ? "blockMs" : "blockSec"}`, "cannot be given with countDenied: a blocked key is denied everything, counted or not");
  }

  const name = spec.name ?? `${limit}-per-${windowMs / 1000}s`;
  if (typeof name !== "string" || !RULE_NAME.test(name)) {
    throw new SluiceConfigError(`${path}name`, `must be 1 to 64 printable ASCII characters without '"', '\\' or '|'; got ${describe(name)}`);
  }

  let keyCapacity;
  if (spec.keyCapacity === undefined) {
    keyCapacity = defaultKeyCapacity(algorithm, limit, path);
  } else {
    keyCapacity = wholeNumber(spec.keyCapacity, `${path}keyCapacity`, 1, 2 ** 32 - 1);
    const bytes = tableBytes(algorithm, limit, keyCapacity);
    if (bytes > MAX_TABLE_BYTES) {
      throw new SluiceConfigError(
        `${path}keyCapacity`,
        `${keyCapacity} would take ${Math.ceil(bytes / 1048576)} MiB for this rule; at most ${MAX_TABLE_BYTES / 1048576} MiB`,
      );
    }
  }

  const rule = Object.freeze({
    // A rule that counts denied requests is another count: its own id (and table).
    // A blocking rule is another count too (its states may be blocks): its own id.
    id: `${name}|${algorithm}|${limit}|${windowMs}|${burst}${countDenied ? "|all" : ""}${blockMs > 0 ? `|block${blockMs}` : ""}${spec.name === undefined && instance !== undefined ? `|#${instance}` : ""}`,
    name,
    algorithm,
    limit,
    windowMs,
    burst,
    keyCapacity,
    // Present only when set, so plain rules keep the shape they always had.
    ...(countDenied ? { countDenied } : {}),
    ...(blockMs > 0 ? { blockMs } : {}),
  });
  try {
    validateRule(rule);
  } catch (error) {
    if (!(error instanceof SluiceError)) throw error;
    const field = userField(error.field ?? "limit", spec);
    throw new SluiceConfigError(`${path}${field}`, `is out of range for ${algorithm}: ${describe(spec[field])}`);
  }
  return rule;
}

/**
 * @param {Record<string, any>} spec
 * @param {string} path
 * @param {number | undefined} instance
 * @param {(rule: NormalizedRule, path: string) => void} declare
 */
function normalizeRule(spec, path, instance, declare) {
  const limitOf = typeof spec.limit === "function" ? spec.limit : undefined;
  if (limitOf !== undefined && spec.rate !== undefined) throw new SluiceConfigError(`${path}rate`, "cannot be given with limit: give rate, or limit and windowSec");
  // A limit function's rule is validated now, as if its limit were 1; each value it returns later is
  // validated like a configured limit, once, and becomes a rule of its own.
  const { overrides, ...ruleSpec } = spec;
  if (overrides !== undefined && limitOf !== undefined) throw new SluiceConfigError(`${path}overrides`, "cannot be given with a limit function: the function decides the limit");
  spec = ruleSpec;
  const rule = normalizeRuleSpec(limitOf === undefined ? spec : { ...spec, limit: 1 }, path, instance);
  if (limitOf === undefined) declare(rule, path);
  /** @type {Map<unknown, NormalizedRule>} */
  const resolved = new Map();
  /** @param {unknown} value */
  const resolve = (value) => {
    let found = resolved.get(value);
    if (found !== undefined) return found;
    if (resolved.size >= MAX_LIMIT_VALUES) {
      throw new SluiceConfigError(
        `${path}limit`,
        `returned a ${MAX_LIMIT_VALUES + 1}th distinct value (${describe(value)}): a limit function must map requests to a few plans, at most ${MAX_LIMIT_VALUES}`,
      );
    }
    found = normalizeRuleSpec({ ...spec, limit: value }, path, instance);
    declare(found, path);
    resolved.set(value, found);
    return found;
  };
  if (spec.key === undefined) {
    throw new SluiceConfigError(`${path}key`, "is missing: give a key function such as ip(), user(fn), apiKey() or route()");
  }
  const key = toKeyFunction(spec.key, `${path}key`);
  // Overrides: every limit they give is a rule made (and validated) now; the base limit is the rule itself.
  /** @type {RuleEntry["overrideOf"]} */
  let overrideOf;
  /** @type {LiveTable | undefined} */
  let live;
  if (isLiveTable(overrides)) {
    // Limits from the live table are made rules when first seen (resolve): a value past the rule's
    // MAX_LIMIT_VALUES is not applied (the rule's own limit decides), never a failed request.
    const table = (live = overrides);
    resolved.set(rule.limit, rule);
    overrideOf = (keyText) => {
      const limit = table.overrideOf(keyText);
      if (limit === undefined || resolved.has(limit) || resolved.size < MAX_LIMIT_VALUES) return limit;
      return undefined;
    };
  } else if (overrides !== undefined) {
    const normalize = overrideListNormalizer(overrides);
    if (normalize === undefined) {
      throw new SluiceConfigError(
        `${path}overrides`,
        `must be overrideList([{ key | prefix, limit }, ...]) or liveOverrides() (import them from "sluice" or "sluice/hono"); got ${describe(overrides)}`,
      );
    }
    const normalized = normalize(`${path}overrides`);
    resolved.set(rule.limit, rule);
    normalized.limits.forEach((limit, i) => {
      try {
        resolve(limit);
      } catch (error) {
        if (!(error instanceof SluiceConfigError)) throw error;
        throw new SluiceConfigError(`${path}overrides`, `limit ${limit} (the ${i + 1}th distinct one) is refused: ${error.message}`);
      }
    });
    overrideOf = normalized.overrideOf;
  }
  let cost;
  if (spec.cost === undefined) {
    cost = 1;
  } else if (typeof spec.cost === "function") {
    cost = spec.cost;
  } else {
    cost = wholeNumber(spec.cost, `${path}cost`, 1, MAX_COST);
  }
  return { rule, key, cost, path, limitOf, resolve, overrideOf, live };
}

/**
 * The specs of a limiter's rules (`rules`, or the options themselves), each with the path its errors name.
 * @param {Record<string, any>} options
 * @returns {Array<{ spec: Record<string, any>, path: string }>}
 */
function ruleSpecs(options) {
  if (options.rules === undefined) return [{ spec: options, path: "" }];
  if (!Array.isArray(options.rules) || options.rules.length < 1 || options.rules.length > MAX_CHECKS_PER_CALL) {
    throw new SluiceConfigError("rules", `must be an array of 1 to ${MAX_CHECKS_PER_CALL} rules; got ${describe(options.rules)}`);
  }
  for (const field of RULE_FIELDS) {
    if (!INHERITED_FIELDS.includes(field) && options[field] !== undefined) {
      throw new SluiceConfigError(field, "cannot be given beside rules: give it inside each rule");
    }
  }
  return options.rules.map((/** @type {unknown} */ rule, /** @type {number} */ i) => {
    const path = `rules[${i}].`;
    if (!isPlainObject(rule)) throw new SluiceConfigError(`rules[${i}]`, `must be an object; got ${describe(rule)}`);
    refuseUnknown(rule, RULE_FIELDS, path);
    const spec = { ...rule };
    for (const field of INHERITED_FIELDS) if (spec[field] === undefined) spec[field] = options[field];
    return { spec, path };
  });
}

/**
 * The middleware's mode and rollout, as the gateway's rules have them (gateway/mode.js).
 * @param {any} options
 * @returns {{ mode: "enforce" | "shadow"; rollout: number }}
 */
function normalizeMode(options) {
  const { mode = "enforce", rollout = 1 } = options;
  if (mode !== "enforce" && mode !== "shadow") throw new SluiceConfigError("mode", `must be "enforce" or "shadow"; got ${describe(mode)}`);
  if (typeof rollout !== "number" || !(rollout >= 0 && rollout <= 1)) {
    throw new SluiceConfigError("rollout", `must be a number from 0 to 1 (the share of keys enforced); got ${describe(rollout)}`);
  }
  if (mode === "shadow" && rollout !== 1) throw new SluiceConfigError("rollout", 'applies to mode "enforce" (a shadow limiter enforces no key)');
  return { mode, rollout };
}

/**
 * @template {Function} F
 * @param {F | undefined} value
 * @param {string} field
 * @returns {F | undefined}
 */
function optionalFunction(value, field) {
  if (value !== undefined && typeof value !== "function") {
    throw new SluiceConfigError(field, `must be a function; got ${describe(value)}`);
  }
  return value;
}

/** @param {unknown} legacyReset @returns {"seconds" | "epoch"} */
function normalizeLegacyReset(legacyReset = "seconds") {
  if (legacyReset !== "seconds" && legacyReset !== "epoch") {
    throw new SluiceConfigError("legacyReset", `must be "seconds" (from now) or "epoch" (Unix time in seconds); got ${describe(legacyReset)}`);
  }
  return legacyReset;
}

/**
 * normalizeResponseOptions validates how limited responses look: { code, headers, problemJson } with
 * their defaults ("rate_limited", "both", false).
 * @param {{ code?: any; headers?: any; problemJson?: any }} options
 * @returns {{ code: string | number; headers: HeaderMode; problemJson: boolean }}
 */
export function normalizeResponseOptions(options) {
  const code = options.code ?? DEFAULT_CODE;
  const headers = options.headers ?? "both";
  const problemJson = options.problemJson ?? false;
  if (!(typeof code === "string" && code !== "") && !Number.isFinite(code)) {
    throw new SluiceConfigError("code", `must be a non-empty string or a number; got ${describe(code)}`);
  }
  if (!HEADER_MODES.includes(headers)) throw new SluiceConfigError("headers", `must be one of ${HEADER_MODES.join(", ")}; got ${describe(headers)}`);
  if (typeof problemJson !== "boolean") throw new SluiceConfigError("problemJson", `must be true or false; got ${describe(problemJson)}`);
  return { code, headers, problemJson };
}

/**
 * normalizeOptions validates the options of a limiter (`surface` "fetch") or middleware ("hono") and
 * returns its settings: { entries: [{rule, key, cost}], rules, policy, code, skip, onLimited, headers,
 * problemJson, store, bypass, clock }.
 * @param {any} options
 * @param {"fetch" | "hono" | "gateway"} surface
 * @returns {Readonly<LimiterSettings>}
 */
export function normalizeOptions(options, surface) {

  if (!isPlainObject(options)) throw new SluiceConfigError("options", `must be an object; got ${describe(options)}`);
  refuseUnknown(options, [...RULE_FIELDS, ...(surface === "hono" ? MIDDLEWARE_FIELDS : LIMITER_FIELDS)], "");
  const { code, headers, problemJson } = normalizeResponseOptions(options);
  const { mode, rollout } = normalizeMode(options);
  const store = resolveStore(options);
  // Only tables the store keeps in this isolate count against its memory (see isolate.js).
  /** @param {NormalizedRule} rule @param {string} path */
  const declare = (rule, path) => {
    const refusal = declareTables(store.isolateTables?.(rule) ?? []);
    if (refusal === undefined) return;
    // Unnamed rules no longer share tables with equal ones: say so where that is what ran out.
    const unnamed = rule.id.endsWith(`|#${instance}`) ? "; each limiter without a name has tables of its own: give one name to the rules that may share counts" : "";
    throw new SluiceConfigError(`${path}keyCapacity`, `${refusal}${unnamed}`);
  };
  const specs = ruleSpecs(options);
  // Rules without a name count per limiter: their ids carry this limiter's build order.
  /** @type {number | undefined} */
  let instance;
  if (specs.some(({ spec }) => spec.name === undefined)) {
    if (unnamedLimiters >= MAX_UNNAMED_LIMITERS) {
      throw new SluiceConfigError(
        "name",
        `is needed: this isolate has built ${MAX_UNNAMED_LIMITERS} limiters without one. A limiter built per request counts from zero every time; ` +
          "build limiters once, at module scope, or give their rules a name (rules with one name and quota share their counts)",
      );
    }
    instance = ++unnamedLimiters;
  }
  const entries = specs.map(({ spec, path }) => normalizeRule(spec, path, instance, declare));
  // KV keeps fixed-window counts, not the core's state: it cannot keep a block. (As the fallback of a
  // durable or redis store, during their outage, it throttles a blocking rule instead: stores/kv.js.)
  if (storeName(options.store) === "kv") {
    entries.forEach(({ rule }, i) => {
      if (rule.blockMs === undefined) return;
      const path = options.rules === undefined ? "" : `rules[${i}].`;
      const field = specs[i].spec.blockMs !== undefined ? "blockMs" : "blockSec";
      throw new SluiceConfigError(`${path}${field}`, 'applies to the stores "memory", "durable" and "redis"; KV keeps counts, not blocks');
    });
  }
  const names = new Set();
  entries.forEach(({ rule, limitOf }, i) => {
    if (limitOf !== undefined) return; // its names are its values'
    if (names.has(rule.name)) throw new SluiceConfigError(`rules[${i}].name`, `${describe(rule.name)} is used by another rule of this limiter`);
    names.add(rule.name);
  });

  const rules = Object.freeze(entries.filter((entry) => entry.limitOf === undefined).map((entry) => entry.rule));
  const dynamic = entries.some((entry) => entry.limitOf !== undefined || entry.overrideOf !== undefined);
  return Object.freeze({
    entries: Object.freeze(entries.map(({ rule, key, cost, limitOf, resolve, overrideOf }) => Object.freeze({ rule, key, cost, limitOf, resolve, overrideOf }))),
    // The live tables of overrides the rules read (refreshed before a request is decided).
    liveTables: Object.freeze([...new Set(entries.map((entry) => entry.live).filter((live) => live !== undefined))]),
    rules,
    policy: dynamic ? "" : policyHeader(rules),
    dynamic,
    mode,
    rollout,
    code,
    skip: optionalFunction(options.skip, "skip"),
    onLimited: optionalFunction(options.onLimited, "onLimited"),
    headers,
    legacyReset: normalizeLegacyReset(options.legacyReset),
    problemJson,
    store,
    bypass: normalizeBypass(options.bypass),
    clock: optionalFunction(options.clock, "clock") ?? nowMs,
    accuracy: accuracyOption(options.accuracy),
  });
}

// `accuracy`: a probe from accuracyProbe() (features/accuracy/probe.js), taken as a value so that the
// engine does not import it.
/** @param {unknown} value @returns {AccuracyProbe | null} */
function accuracyOption(value) {
  if (value === undefined) return null;
  if (value === null || typeof value !== "object" || typeof (/** @type {{ observe?: unknown }} */ (value).observe) !== "function") {
    throw new SluiceConfigError("accuracy", `must be a probe built by accuracyProbe({ sample }); got ${describe(value)}`);
  }
  return /** @type {AccuracyProbe} */ (value);
}
