// One rate-limit rule of the gateway configuration: the limiter's own rule, validated by the host
// (options.js and the core: one place holds every bound of a limit, a window or a burst), plus what
// only the gateway has: the key as named parts, the store, the mode and the rollout.

import { ALGORITHMS } from "../../wasm-bindings/sluice.js";
import { normalizeRuleSpec } from "../src/engine/options.js";
import { normalizeOverrides } from "../src/features/overrides/overrides.js";
import { autoBlock, strikesRuleOf } from "../src/features/auto-block/auto-block.js";
import { responseCounting as responseCountingOf } from "../src/features/response-count/options.js";
import { MODES } from "../src/engine/mode.js";
import { CF_FIELDS } from "../src/http/characteristics.js";
import { checkLeaseOptions } from "../src/stores/leases.js";
import {
  BINDING_DESCRIPTION,
  BINDING_NAME,
  ConfigError,
  HEADER_DESCRIPTION,
  HEADER_NAME,
  expectArray,
  expectInteger,
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
/** @import { Mode } from "../src/engine/mode.js" */
/** @import { NormalizedRule } from "../src/stores/store.js" */
/**
 * What sameRule compares of a rate-limit or lockout rule (the response-counting, live-override and
 * auto-blocking settings only by their JSON).
 * @typedef {{ kind?: string, id: string, keyCapacity?: number, store: string, lease?: unknown, key: readonly string[],
 *   autoBlock?: unknown, liveOverrides?: unknown, countWhen?: unknown, costFrom?: unknown }} RuleLike
 */

import { CONFIG_FIELDS, KEY_PARTS, RULE_NAME, STORES, boundsOf, fieldsOf } from "./config-fields.js";

export { KEY_PARTS, STORES };
const NAMED_KEY_PARTS = ["ip", "user", "route"];

// The fields the host's limiter takes as they are; the others are the gateway's.
const LIMITER_FIELDS = ["name", "algorithm", "limit", "windowSec", "windowMs", "burst", "keyCapacity", "blockSec", "blockMs", "overrides"];
// Every field, from the one table the JSON Schema is generated from (config-fields.js). Rule names
// (RULE_NAME there) appear in response headers, metric labels and log lines: stricter than the host's.
const RULE_FIELDS = fieldsOf("rule");
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
  const responseCounting = raw.countWhen === undefined && raw.costFrom === undefined ? undefined : validateResponseCounting(raw, path, mode, rollout);
  const live = raw.liveOverrides === undefined ? undefined : validateLiveOverrides(raw.liveOverrides, path, overrides);
  const blocking = raw.autoBlock === undefined ? undefined : validateAutoBlock(raw.autoBlock, path, limiterRule, store, mode, rollout);
  // `lease` (store "durable" only): this rule's leases, overriding `stores.durable.lease` (true, false
  // or { leaseMs, maxLeaseUnits, maxKeys }); undefined: the store's setting.
  let lease;
  if (raw.lease !== undefined) {
    if (store !== "durable") throw new ConfigError(fieldPath(path, "lease"), `applies to store "durable" only (this rule's is "${store}")`);
    lease = hostValidated(path, () => checkLeaseOptions(raw.lease)) ?? false;
  }
  return Object.freeze({
    ...limiterRule,
    key,
    store,
    mode,
    rollout,
    ...(overrides !== undefined ? { overrides } : {}),
    ...(lease === undefined ? {} : { lease: Object.freeze(lease) }),
    ...(blocking === undefined ? {} : { autoBlock: blocking }),
    ...(live === undefined ? {} : { liveOverrides: live }),
    ...(responseCounting === undefined ? {} : responseCounting),
  });
}

// `countWhen` ({ status: [401, "500-599"] }) and `costFrom` ({ header, max, default }): the rule counts
// on the upstream's response (response-rules.js), checked by the library's own validation of them
// (features/response-count/options.js), so the bounds are one place's. Only on a rule enforced on
// every key: its check before the upstream call refuses, there is no "would have denied" to count.
/** @param {RawJson} raw the rule @param {string} path @param {Mode} mode @param {number} rollout */
function validateResponseCounting(raw, path, mode, rollout) {
  for (const name of ["countWhen", "costFrom"]) if (raw[name] !== undefined) expectObject(raw[name], fieldPath(path, name));
  if (mode !== "enforce" || rollout !== 1) {
    throw new ConfigError(fieldPath(path, raw.countWhen !== undefined ? "countWhen" : "costFrom"), 'applies to a rule enforced on every key (mode "enforce", no rollout)');
  }
  const given = { ...(raw.countWhen !== undefined ? { countWhen: raw.countWhen } : {}), ...(raw.costFrom !== undefined ? { costFrom: raw.costFrom } : {}) };
  hostValidated(path, () => responseCountingOf({ key: () => "k", limit: 1, windowSec: 1, ...given }));
  return Object.freeze(structuredClone(given));
}

// `liveOverrides` ({ binding, name, refreshMs }): the table a rule's overrides come from, changed
// without a redeploy (features/overrides/live.js); its fields and bounds are the table's
// (config-fields.js), its defaults the library's. Not beside `overrides`: one source of overrides.
/** @param {RawJson} raw @param {string} path the rule's @param {unknown} overrides the rule's own, if any */
function validateLiveOverrides(raw, path, overrides) {
  const field = fieldPath(path, "liveOverrides");
  expectObject(raw, field);
  expectKnownFields(raw, field, fieldsOf("liveOverrides"));
  if (overrides !== undefined) throw new ConfigError(field, "cannot be given with overrides: give the overrides in the configuration or in the live table");
  const binding = raw.binding === undefined ? "SLUICE_OVERRIDES" : expectString(raw.binding, fieldPath(field, "binding"), { pattern: BINDING_NAME, description: BINDING_DESCRIPTION });
  const name = raw.name === undefined ? "overrides" : expectString(raw.name, fieldPath(field, "name"), { pattern: CONFIG_FIELDS.liveOverrides.name.pattern, description: "1 to 64 letters, digits, _, . or -" });
  const refreshMs = raw.refreshMs === undefined ? 10_000 : expectInteger(raw.refreshMs, fieldPath(field, "refreshMs"), ...boundsOf("liveOverrides", "refreshMs"));
  return Object.freeze({ binding, name, refreshMs });
}

// `autoBlock` ({ after, withinSec | withinMs, blockSec | blockMs }): checked by the library's autoBlock(),
// with its strikes rule made as the limiter will make it, so every refusal names its path now. Only on
// a rule whose 429s are answered: a shadowed or rolled-out rule's denials are no client's refusals.
/**
 * @param {RawJson} raw @param {string} path the rule's @param {NormalizedRule} limiterRule the rule as the host normalized it
 * @param {string} store @param {Mode} mode @param {number} rollout
 */
function validateAutoBlock(raw, path, limiterRule, store, mode, rollout) {
  const field = fieldPath(path, "autoBlock");
  expectObject(raw, field);
  if (store === "kv") throw new ConfigError(field, 'applies to the stores "memory", "durable" and "redis", not "kv": KV keeps counts, not blocks');
  if (mode !== "enforce" || rollout !== 1) throw new ConfigError(field, `applies to a rule enforced on every key (mode "enforce", no rollout): its strikes are 429s`);
  const spec = hostValidated(path, () => autoBlock(raw));
  hostValidated(path, () => strikesRuleOf(spec, limiterRule, ""));
  return Object.freeze({ after: spec.after, withinMs: spec.withinMs, blockMs: spec.blockMs });
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
    JSON.stringify(a.autoBlock) === JSON.stringify(b.autoBlock) &&
    JSON.stringify(a.liveOverrides) === JSON.stringify(b.liveOverrides) &&
    JSON.stringify(a.countWhen) === JSON.stringify(b.countWhen) &&
    JSON.stringify(a.costFrom) === JSON.stringify(b.costFrom) &&
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
