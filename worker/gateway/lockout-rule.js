// A lockout rule of the gateway configuration: `{ "kind": "lockout", ... }` among a route's rules.
// It refuses logins to an account (per account and client IP, and per account) after repeated
// failures, judged from the upstream's status; its account is a field of the JSON request body. The
// host validates what it shares with lockout() (features/lockout/options.js), so the bounds are one place's;
// the gateway adds the body field, the store, the mode and the body's size bound.
//
//   { "name": "login-lockout", "kind": "lockout", "key": "body:username",
//     "maxFailures": 5, "windowSec": 900, "lockSec": 900, "account": { "maxFailures": 20 } }

import { normalizeLockoutOptions } from "../src/features/lockout/options.js";
import { DEFAULT_MAX_BODY_BYTES } from "../src/http/bounded-body.js";
import { ConfigError, expectInteger, expectKnownFields, expectObject, expectOneOf, expectString, fieldPath, hostValidated, show } from "./validate.js";

/** @import { RawJson } from "./validate.js" */
/** A validated lockout rule of a route. @typedef {ReturnType<typeof validateLockoutRule>} GatewayLockoutRule */

export const LOCKOUT_KIND = "lockout";
/** The gateway's code in the body of a locked attempt's 429. */
export const LOCKED_CODE = "sluice_locked_out";
const MAX_BODY_BYTES = 1024 * 1024;
const LOCKOUT_STORES = ["durable", "memory"];
const LOCKOUT_MODES = ["enforce", "shadow", "bypass"];
// The fields lockout() takes as they are; the others are the gateway's.
const HOST_FIELDS = ["maxFailures", "windowSec", "lockSec", "account", "backoff", "failureStatuses", "resetOnSuccess", "keyCapacity", "failMode", "fallback"];
const FIELDS = ["name", "kind", "key", "store", "mode", "client", "normalize", "maxBodyBytes", ...HOST_FIELDS];
const RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/;
const BODY_FIELD = /^body:([A-Za-z0-9_.$-]{1,64})$/;

/** Whether a raw rule of the configuration is a lockout rule. @param {RawJson} raw @returns {boolean} */
export function isLockoutRule(raw) {
  return raw !== null && typeof raw === "object" && raw.kind === LOCKOUT_KIND;
}

/**
 * The validated, frozen lockout rule at `path`: { kind, name, key: ["body:<field>"], field,
 * maxBodyBytes, client ("ip" or false), normalize, store, mode, rollout: 1, id, keyCapacity, host },
 * where `host` holds the options lockout() takes (without key, store settings or clock).
 * @param {RawJson} raw
 * @param {string} path
 */
export function validateLockoutRule(raw, path) {
  expectObject(raw, path);
  expectKnownFields(raw, path, FIELDS);
  const name = expectString(raw.name, fieldPath(path, "name"), {
    pattern: RULE_NAME,
    description: "1 to 40 letters, digits, '_', '.' or '-', starting with a letter or digit",
  });
  const keyPath = fieldPath(path, "key");
  if (raw.key === undefined) throw new ConfigError(keyPath, 'is required: "body:<field>", the JSON body field naming the account');
  const match = typeof raw.key === "string" ? BODY_FIELD.exec(raw.key) : null;
  if (match === null) throw new ConfigError(keyPath, `must be "body:<field>" (the JSON body field naming the account, 1 to 64 letters, digits, '_', '.', '$' or '-'); got ${show(raw.key)}`);
  const store = raw.store === undefined ? "durable" : expectOneOf(raw.store, fieldPath(path, "store"), LOCKOUT_STORES);
  const mode = raw.mode === undefined ? "enforce" : expectOneOf(raw.mode, fieldPath(path, "mode"), LOCKOUT_MODES);
  const client = raw.client === undefined ? "ip" : expectOneOf(raw.client, fieldPath(path, "client"), ["ip", false]);
  const normalize = raw.normalize === undefined ? true : expectOneOf(raw.normalize, fieldPath(path, "normalize"), [true, false]);
  const maxBodyBytes = raw.maxBodyBytes === undefined ? DEFAULT_MAX_BODY_BYTES : expectInteger(raw.maxBodyBytes, fieldPath(path, "maxBodyBytes"), 64, MAX_BODY_BYTES);
  /** @type {Record<string, RawJson>} */
  const host = {};
  for (const field of HOST_FIELDS) if (raw[field] !== undefined) host[field] = structuredClone(raw[field]);
  if (host.failMode !== undefined) expectOneOf(host.failMode, fieldPath(path, "failMode"), ["closed", "open"]);
  if (host.fallback !== undefined && !(Array.isArray(host.fallback) && (host.fallback.length === 0 || (host.fallback.length === 1 && host.fallback[0] === "memory")))) {
    throw new ConfigError(fieldPath(path, "fallback"), `must be ["memory"] or [] (KV cannot clear a count nor show a lock everywhere at once); got ${show(host.fallback)}`);
  }
  if (store === "memory" && (host.failMode !== undefined || host.fallback !== undefined)) {
    throw new ConfigError(fieldPath(path, host.failMode !== undefined ? "failMode" : "fallback"), 'applies to store "durable" only');
  }
  // Every other bound, checked by the host itself (on the memory store: the store is built later).
  const { failMode: _failMode, fallback: _fallback, ...counting } = host;
  hostValidated(path, () => normalizeLockoutOptions({ ...counting, key: "validation", client: client === "ip" ? undefined : false, name, store: "memory" }));
  return Object.freeze({
    kind: LOCKOUT_KIND,
    name,
    key: Object.freeze([raw.key]),
    field: match[1],
    maxBodyBytes,
    client,
    normalize,
    store,
    mode,
    rollout: 1,
    // Two rules of one name share their counters (config.js holds them to sameRule).
    id: `lockout|${JSON.stringify([name, store, client, normalize, host])}`,
    keyCapacity: host.keyCapacity,
    host: Object.freeze(host),
  });
}
