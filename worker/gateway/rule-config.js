// One rate-limit rule of the gateway configuration: the limiter's own rule, validated by the host
// (options.js and the core: one place holds every bound of a limit, a window or a burst), plus what
// only the gateway has: the key as named parts, the store, the mode and the rollout.

import { ALGORITHMS } from "../../wasm-bindings/sluice.js";
import { normalizeRuleSpec } from "../src/engine/options.js";
import { normalizeOverrides } from "../src/features/overrides/overrides.js";
import { MODES } from "../src/engine/mode.js";
import { CF_FIELDS } from "../src/http/characteristics.js";
import { checkLeaseOptions } from "../src/stores/leases.js";
import {
  ConfigError,
  HEADER_DESCRIPTION,
  HEADER_NAME,
  expectArray,
  expectKnownFields,
  expectNumber,
  expectObject,
  expectOneOf,
  expectString,
  fieldPath,
  hostValidated,
  show,
} from "./validate.js";

/** @import { RawJson } from "./validate.js" */
/** What sameRule compares of a rate-limit or lockout rule. @typedef {{ kind?: string, id: string, keyCapacity?: number, store: string, lease?: unknown, key: readonly string[] }} RuleLike */

export const STORES = Object.freeze(["memory", "durable", "kv", "redis"]);
export const KEY_PARTS = Object.freeze(["ip", "user", "route", "apiKey:<header>", "cf:<field>", "cookie:<name>", "query:<name>", "jwt:<claim>"]);
const NAMED_KEY_PARTS = ["ip", "user", "route"];

// The fields the host's limiter takes as they are; the others are the gateway's.
const LIMITER_FIELDS = ["name", "algorithm", "limit", "windowSec", "windowMs", "burst", "keyCapacity", "blockSec", "blockMs", "overrides"];
const RULE_FIELDS = [...LIMITER_FIELDS, "key", "store", "mode", "rollout", "lease"];
// Rule names appear in response headers (RateLimit-Policy), metric labels and log lines: stricter
// than the host's printable ASCII.
const RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const RULE_NAME_DESCRIPTION = "1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit";
const API_KEY_PART = /^apiKey:(.*)$/;
const CHARACTERISTIC_PART = /^(cf|cookie|query|jwt):/;

// A key is one part or a list of parts; parts combine into one key (ip + route: per client per route).
/** @param {RawJson} raw @param {string} path @returns {string[]} */
export function validateKey(raw, path) {
  const parts = typeof raw === "string" ? [raw] : expectArray(raw, path, { min: 1, max: 4 });
  const seen = new Set();
  return parts.map((/** @type {RawJson} */ part, /** @type {number} */ i) => {
    const partPath = typeof raw === "string" ? path : fieldPath(path, i);
    expectString(part, partPath);
    const apiKey = API_KEY_PART.exec(part);
    let canonical;
    if (apiKey !== null) {
      const header = expectString(apiKey[1], partPath, { pattern: HEADER_NAME, description: `apiKey:<${HEADER_DESCRIPTION}>` });
      canonical = `apiKey:${header.toLowerCase()}`;
    } else if (NAMED_KEY_PARTS.includes(part)) {
      canonical = part;
    } else if (CHARACTERISTIC_PART.test(part)) {
      canonical = validateCharacteristic(part, partPath);
    } else {
      throw new ConfigError(partPath, `must be one of ${KEY_PARTS.join(", ")}; got ${show(part)}`);
    }
    if (seen.has(canonical)) throw new ConfigError(partPath, `${show(part)} appears twice in the key`);
    seen.add(canonical);
    return canonical;
  });
}

/**
 * The validated, frozen rule at `path` (e.g. `routes[0].rules[1]`): the host's NormalizedRule (id,
 * name, algorithm, limit, windowMs, burst, keyCapacity) plus key, store, mode and rollout.
 * @param {RawJson} raw
 * @param {string} path
 */
export function validateRule(raw, path) {
  expectObject(raw, path);
  expectKnownFields(raw, path, RULE_FIELDS);
  expectString(raw.name, fieldPath(path, "name"), { pattern: RULE_NAME, description: RULE_NAME_DESCRIPTION });
  // The host would default it; a gateway rule says which algorithm it runs.
  if (raw.algorithm === undefined) throw new ConfigError(fieldPath(path, "algorithm"), `is required: one of ${ALGORITHMS.join(", ")}`);
  /** @type {Record<string, RawJson>} */
  const spec = {};
  for (const field of LIMITER_FIELDS) if (raw[field] !== undefined) spec[field] = raw[field];
  const { overrides, ...counted } = spec;
  const limiterRule = hostValidated(path, () => normalizeRuleSpec(counted));
  // Checked here, at start-up; the limiter makes each override limit a rule of its own when it is built.
  if (overrides !== undefined) hostValidated(path, () => normalizeOverrides(overrides, "overrides"));
  if (raw.key === undefined) throw new ConfigError(fieldPath(path, "key"), `is required: one of ${KEY_PARTS.join(", ")}, or a list of them`);
  const key = Object.freeze(validateKey(raw.key, fieldPath(path, "key")));
  const store = raw.store === undefined ? "memory" : expectOneOf(raw.store, fieldPath(path, "store"), STORES);
  // KV keeps fixed-window counts, not the core's state bytes: it has nowhere to keep a block. Said at
  // start-up rather than by the store's first request.
  if (limiterRule.blockMs !== undefined && store === "kv") {
    throw new ConfigError(fieldPath(path, raw.blockMs !== undefined ? "blockMs" : "blockSec"), 'applies to the stores "memory" and "durable", not "kv"');
  }
  const mode = raw.mode === undefined ? "enforce" : expectOneOf(raw.mode, fieldPath(path, "mode"), MODES);
  let rollout = 1;
  if (raw.rollout !== undefined) {
    rollout = expectNumber(raw.rollout, fieldPath(path, "rollout"), 0, 1);
    if (mode !== "enforce") {
      throw new ConfigError(fieldPath(path, "rollout"), `applies only to mode "enforce" (this rule is "${mode}")`);
    }
  }
  // `lease` (store "durable" only): this rule's leases, overriding `stores.durable.lease` (true, false
  // or { leaseMs, maxLeaseUnits, maxKeys }); undefined: the store's setting.
  let lease;
  if (raw.lease !== undefined) {
    if (store !== "durable") throw new ConfigError(fieldPath(path, "lease"), `applies to store "durable" only (this rule's is "${store}")`);
    lease = hostValidated(path, () => checkLeaseOptions(raw.lease)) ?? false;
  }
  return Object.freeze({ ...limiterRule, key, store, mode, rollout, ...(overrides !== undefined ? { overrides } : {}), ...(lease === undefined ? {} : { lease: Object.freeze(lease) }) });
}

/**
 * The limiter group a rule belongs to: its store, and for a durable rule with its own `lease`, that
 * lease (rules of one group are one all-or-nothing call on one store chain).
 * @param {{ store: string, lease?: unknown }} rule
 * @returns {string}
 */
export function storeGroupOf(rule) {
  return rule.lease === undefined ? rule.store : `${rule.store}|${JSON.stringify(rule.lease)}`;
}

/** Two rules that would share limiter state (same name) must be the same rule. @param {RuleLike} a @param {RuleLike} b @returns {boolean} */
export function sameRule(a, b) {
  return (
    a.kind === b.kind &&
    a.id === b.id &&
    a.keyCapacity === b.keyCapacity &&
    a.store === b.store &&
    JSON.stringify(a.lease) === JSON.stringify(b.lease) &&
    a.key.join("+") === b.key.join("+")
  );
}

// cf:<field> (request.cf, set by Cloudflare), cookie:<name>, query:<name>, jwt:<claim> (a claim of the
// token verified with the configuration's `jwt` settings): checked as the library's helpers check them
// (http/characteristics.js, http/jwt.js), so the error names the configuration's field.
/** @param {string} part @param {string} path @returns {string} */
function validateCharacteristic(part, path) {
  const [kind, name] = [part.slice(0, part.indexOf(":")), part.slice(part.indexOf(":") + 1)];
  if (kind === "cf" && !Object.hasOwn(CF_FIELDS, name)) throw new ConfigError(path, `cf:<field> takes one of ${Object.keys(CF_FIELDS).join(", ")}; got ${show(part)}`);
  if ((kind === "cookie" || kind === "query") && !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/.test(name)) throw new ConfigError(path, `${kind}:<name> takes a cookie or parameter name; got ${show(part)}`);
  if (kind === "jwt" && !/^[A-Za-z0-9_.:-]{1,64}$/.test(name)) throw new ConfigError(path, `jwt:<claim> takes a claim name; got ${show(part)}`);
  return `${kind}:${name}`;
}
