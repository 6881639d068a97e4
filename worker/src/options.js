// Options of rateLimit() and createLimiter(), validated and normalized once, at construction. Every
// mistake throws a SluiceConfigError naming the option; nothing here is left to fail per request.
import { ALGORITHMS, MAX_CHECKS_PER_CALL, SluiceError } from "../../wasm-bindings/sluice.js";
import { nowMs } from "./clock.js";
import { SluiceConfigError, describe } from "./errors.js";
import { HEADER_MODES, policyHeader } from "./headers.js";
import { declareTables, slotBytes, tableBytes, validateRule } from "./isolate.js";
import { toKeyFunction } from "./keys.js";
import { STORE_FIELDS, resolveStore } from "./stores/registry.js";

/** The algorithm of a rule that names none: smooth like a log, constant memory like a window. */
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
export const DEFAULT_BYPASS = Object.freeze({ variable: "ENV", value: "dev" });

const BUCKETS = new Set(["token-bucket", "leaky-bucket", "gcra"]);
// Printable ASCII without '"' and '\' (the name is a structured-field string) and '|' (the id's separator).
const RULE_NAME = /^[\x20-\x21\x23-\x5b\x5d-\x7b\x7d-\x7e]{1,64}$/;
const RULE_FIELDS = ["name", "key", "limit", "windowSec", "windowMs", "algorithm", "burst", "rate", "cost", "keyCapacity", "countDenied"];
// Fields a rule inherits from the top level when `rules` is given.
const INHERITED_FIELDS = ["key", "algorithm", "cost", "keyCapacity"];
const LIMITER_FIELDS = ["rules", "code", "skip", "headers", "problemJson", ...STORE_FIELDS, "bypass", "clock"];
const MIDDLEWARE_FIELDS = [...LIMITER_FIELDS, "onLimited"];

function isPlainObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function refuseUnknown(object, known, where) {
  for (const field of Object.keys(object)) {
    if (!known.includes(field)) {
      throw new SluiceConfigError(`${where}${field}`, `is not an option (known: ${known.join(", ")})`);
    }
  }
}

function wholeNumber(value, field, min, max) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new SluiceConfigError(field, `must be a whole number from ${min} to ${max}; got ${describe(value)}`);
  }
  return value;
}

// The sustained rate `rate` (per second, up to 3 decimals) as an exact limit per window.
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
function userField(coreField, spec) {
  if (coreField === "windowMs") {
    if (spec.rate !== undefined) return "rate";
    return spec.windowMs !== undefined ? "windowMs" : "windowSec";
  }
  if (coreField === "limit" && spec.rate !== undefined) return "rate";
  return coreField;
}

// The window in milliseconds, from windowSec (whole milliseconds) or windowMs, exactly one of them.
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
 */
export function normalizeRuleSpec(spec, path = "") {
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
    id: `${name}|${algorithm}|${limit}|${windowMs}|${burst}${countDenied ? "|all" : ""}`,
    name,
    algorithm,
    limit,
    windowMs,
    burst,
    keyCapacity,
    // Present only when set, so plain rules keep the shape they always had.
    ...(countDenied ? { countDenied } : {}),
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

function normalizeRule(spec, path) {
  const rule = normalizeRuleSpec(spec, path);
  if (spec.key === undefined) {
    throw new SluiceConfigError(`${path}key`, "is missing: give a key function such as ip(), user(fn), apiKey() or route()");
  }
  const key = toKeyFunction(spec.key, `${path}key`);
  let cost;
  if (spec.cost === undefined) {
    cost = 1;
  } else if (typeof spec.cost === "function") {
    cost = spec.cost;
  } else {
    cost = wholeNumber(spec.cost, `${path}cost`, 1, MAX_COST);
  }
  return { rule, key, cost, path };
}

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
  return options.rules.map((rule, i) => {
    const path = `rules[${i}].`;
    if (!isPlainObject(rule)) throw new SluiceConfigError(`rules[${i}]`, `must be an object; got ${describe(rule)}`);
    refuseUnknown(rule, RULE_FIELDS, path);
    const spec = { ...rule };
    for (const field of INHERITED_FIELDS) if (spec[field] === undefined) spec[field] = options[field];
    return { spec, path };
  });
}

function optionalFunction(value, field) {
  if (value !== undefined && typeof value !== "function") {
    throw new SluiceConfigError(field, `must be a function; got ${describe(value)}`);
  }
  return value;
}

function normalizeBypass(bypass) {
  if (bypass === undefined) return DEFAULT_BYPASS;
  if (bypass === false) return null;
  if (!isPlainObject(bypass)) throw new SluiceConfigError("bypass", `must be false or { variable, value }; got ${describe(bypass)}`);
  refuseUnknown(bypass, ["variable", "value"], "bypass.");
  const variable = bypass.variable ?? DEFAULT_BYPASS.variable;
  const value = bypass.value ?? DEFAULT_BYPASS.value;
  if (typeof variable !== "string" || variable === "") throw new SluiceConfigError("bypass.variable", `must be the name of an environment variable; got ${describe(variable)}`);
  if (typeof value !== "string" || value === "") throw new SluiceConfigError("bypass.value", `must be a non-empty string; got ${describe(value)}`);
  return Object.freeze({ variable, value });
}

/**
 * normalizeResponseOptions validates how limited responses look: { code, headers, problemJson } with
 * their defaults ("rate_limited", "both", false).
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
 */
export function normalizeOptions(options, surface) {
  if (!isPlainObject(options)) throw new SluiceConfigError("options", `must be an object; got ${describe(options)}`);
  refuseUnknown(options, [...RULE_FIELDS, ...(surface === "hono" ? MIDDLEWARE_FIELDS : LIMITER_FIELDS)], "");
  const entries = ruleSpecs(options).map(({ spec, path }) => normalizeRule(spec, path));
  const names = new Set();
  entries.forEach(({ rule }, i) => {
    if (names.has(rule.name)) throw new SluiceConfigError(`rules[${i}].name`, `${describe(rule.name)} is used by another rule of this limiter`);
    names.add(rule.name);
  });

  const { code, headers, problemJson } = normalizeResponseOptions(options);
  const store = resolveStore(options);
  // Only tables the store keeps in this isolate count against its memory (see isolate.js).
  for (const { rule, path } of entries) {
    const refusal = declareTables(store.isolateTables?.(rule) ?? []);
    if (refusal !== undefined) throw new SluiceConfigError(`${path}keyCapacity`, refusal);
  }

  const rules = Object.freeze(entries.map((entry) => entry.rule));
  return Object.freeze({
    entries: Object.freeze(entries.map(({ rule, key, cost }) => Object.freeze({ rule, key, cost }))),
    rules,
    policy: policyHeader(rules),
    code,
    skip: optionalFunction(options.skip, "skip"),
    onLimited: optionalFunction(options.onLimited, "onLimited"),
    headers,
    problemJson,
    store,
    bypass: normalizeBypass(options.bypass),
    clock: optionalFunction(options.clock, "clock") ?? nowMs,
  });
}
