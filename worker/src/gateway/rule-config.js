// One rate-limit rule of the gateway configuration, validated into the shape sluice's limiter options
// take (name, algorithm, limit, windowMs, burst, key, store) plus the gateway's mode and rollout.
// Bounds are the core's (cpp/include/sluice/rule.hpp); combinations the core refuses beyond these
// (e.g. a sliding log over 2^31 ms) are reported when the limiter is built, which is also start-up.

import { ALGORITHMS } from "../../../wasm-bindings/sluice.js";
import { MODES } from "./mode.js";
import {
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
  show,
} from "./validate.js";

export const BUCKET_ALGORITHMS = Object.freeze(["token-bucket", "leaky-bucket", "gcra"]);
export const STORES = Object.freeze(["memory", "durable", "kv"]);
export const KEY_PARTS = Object.freeze(["ip", "user", "route", "apiKey:<header>"]);
const NAMED_KEY_PARTS = ["ip", "user", "route"];

const MAX_LIMIT = 2 ** 31;
const MAX_WINDOW_MS = 2 ** 36;
const RULE_FIELDS = ["name", "algorithm", "limit", "windowSec", "windowMs", "burst", "key", "store", "mode", "rollout"];
// Rule names appear in response headers (RateLimit-Policy), metric labels and log lines.
const RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const RULE_NAME_DESCRIPTION = "1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit";
const API_KEY_PART = /^apiKey:(.*)$/;

function validateWindow(raw, path) {
  const hasSec = raw.windowSec !== undefined;
  const hasMs = raw.windowMs !== undefined;
  if (hasSec === hasMs) {
    throw new ConfigError(fieldPath(path, "windowSec"), "give exactly one of windowSec and windowMs");
  }
  if (hasMs) return expectInteger(raw.windowMs, fieldPath(path, "windowMs"), 1, MAX_WINDOW_MS);
  const secPath = fieldPath(path, "windowSec");
  expectNumber(raw.windowSec, secPath, 0.001, MAX_WINDOW_MS / 1000);
  const windowMs = raw.windowSec * 1000;
  if (!Number.isInteger(windowMs)) {
    throw new ConfigError(secPath, `must be a whole number of milliseconds; got ${show(raw.windowSec)}`);
  }
  return windowMs;
}

// A key is one part or a list of parts; parts combine into one key (ip + route: per client per route).
function validateKey(raw, path) {
  const parts = typeof raw === "string" ? [raw] : expectArray(raw, path, { min: 1, max: 4 });
  const seen = new Set();
  return parts.map((part, i) => {
    const partPath = typeof raw === "string" ? path : fieldPath(path, i);
    expectString(part, partPath);
    const apiKey = API_KEY_PART.exec(part);
    let canonical;
    if (apiKey !== null) {
      const header = expectString(apiKey[1], partPath, { pattern: HEADER_NAME, description: `apiKey:<${HEADER_DESCRIPTION}>` });
      canonical = `apiKey:${header.toLowerCase()}`;
    } else if (NAMED_KEY_PARTS.includes(part)) {
      canonical = part;
    } else {
      throw new ConfigError(partPath, `must be one of ${KEY_PARTS.join(", ")}; got ${show(part)}`);
    }
    if (seen.has(canonical)) throw new ConfigError(partPath, `${show(part)} appears twice in the key`);
    seen.add(canonical);
    return canonical;
  });
}

/** The validated, frozen rule at `path` (e.g. `routes[0].rules[1]`). */
export function validateRule(raw, path) {
  expectObject(raw, path);
  expectKnownFields(raw, path, RULE_FIELDS);
  const name = expectString(raw.name, fieldPath(path, "name"), { pattern: RULE_NAME, description: RULE_NAME_DESCRIPTION });
  const algorithm = expectOneOf(raw.algorithm, fieldPath(path, "algorithm"), ALGORITHMS);
  const limit = expectInteger(raw.limit, fieldPath(path, "limit"), 1, MAX_LIMIT);
  const windowMs = validateWindow(raw, path);
  let burst = 0;
  if (raw.burst !== undefined) {
    const burstPath = fieldPath(path, "burst");
    if (!BUCKET_ALGORITHMS.includes(algorithm)) {
      throw new ConfigError(burstPath, `only ${BUCKET_ALGORITHMS.join(", ")} take a burst; ${algorithm} admits at most limit per window`);
    }
    burst = expectInteger(raw.burst, burstPath, 1, MAX_LIMIT);
  }
  if (raw.key === undefined) throw new ConfigError(fieldPath(path, "key"), `is required: one of ${KEY_PARTS.join(", ")}, or a list of them`);
  const key = Object.freeze(validateKey(raw.key, fieldPath(path, "key")));
  const store = raw.store === undefined ? "memory" : expectOneOf(raw.store, fieldPath(path, "store"), STORES);
  const mode = raw.mode === undefined ? "enforce" : expectOneOf(raw.mode, fieldPath(path, "mode"), MODES);
  let rollout = 1;
  if (raw.rollout !== undefined) {
    rollout = expectNumber(raw.rollout, fieldPath(path, "rollout"), 0, 1);
    if (mode !== "enforce") {
      throw new ConfigError(fieldPath(path, "rollout"), `applies only to mode "enforce" (this rule is "${mode}")`);
    }
  }
  return Object.freeze({ name, algorithm, limit, windowMs, burst, key, store, mode, rollout });
}

/** Two rules that would share limiter state (same name) must be the same rule. */
export function sameRule(a, b) {
  return (
    a.algorithm === b.algorithm &&
    a.limit === b.limit &&
    a.windowMs === b.windowMs &&
    a.burst === b.burst &&
    a.store === b.store &&
    a.key.join("+") === b.key.join("+")
  );
}
