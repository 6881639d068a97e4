// A route's `websocket` block: how many connections a client may hold open through the gateway, and
// how many messages it may send on each. Validated at start-up like every other field; the host's own
// constructors (createConcurrencyEngine, createMessageLimiter) check the numbers, and their refusals
// are named under the route (`routes[5].websocket.connections.max`).
//
//   "websocket": {
//     "connections": { "max": 3, "key": "user", "leaseSec": 60, "store": "durable" },
//     "messages": { "perConnection": { "limit": 20, "windowSec": 10 }, "onLimited": "close", "closeCode": 1008 },
//     "maxMessageBytes": 65536
//   }
//
// `maxMessageBytes` bounds every message a client sends (text counted in UTF-8 bytes): a larger one
// closes the connection with 1009 (message too big) and never reaches the upstream. Default 1 MiB.
import { createConcurrencyEngine } from "../src/features/concurrency/engine.js";
import { createMessageLimiter } from "../src/features/websocket/message-limit.js";
import { validateKey } from "./rule-config.js";
import { ConfigError, expectInteger, expectKnownFields, expectNumber, expectObject, expectOneOf, fieldPath, hostValidated } from "./validate.js";

/**
 * The `websocket` block as written in the configuration.
 * @typedef {object} WebSocketInput
 * @property {{ max: number; key: string | string[]; leaseSec?: number; store?: "memory" | "durable"; timeoutMs?: number; status?: number }} [connections]
 * @property {import("../src/features/websocket/message-limit.js").MessageLimitOptions} [messages]
 * @property {number} [maxMessageBytes] The largest message a client may send, in bytes (1 to 33554432); default 1048576.
 */
/**
 * The validated block.
 * @typedef {{
 *   readonly connections: { readonly name: string; readonly max: number; readonly key: readonly string[]; readonly leaseSec: number; readonly store: "memory" | "durable"; readonly timeoutMs: number | undefined; readonly status: number } | null;
 *   readonly messages: (import("../src/features/websocket/message-limit.js").MessageLimitOptions & { name: string }) | null;
 *   readonly maxMessageBytes: number;
 * }} WebSocketLimitsConfig
 */

const FIELDS = ["connections", "messages", "maxMessageBytes"];
/** The default bound on a client's message: 1 MiB, the size Cloudflare documents for a WebSocket message. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1_048_576;
const MAX_MAX_MESSAGE_BYTES = 33_554_432;
const CONNECTION_FIELDS = ["max", "key", "leaseSec", "store", "timeoutMs", "status"];
const MESSAGE_FIELDS = ["perConnection", "perKey", "onLimited", "closeAfter", "closeCode", "closeReason"];
/** @type {Array<"memory" | "durable">} */
const CONNECTION_STORES = ["memory", "durable"];

/**
 * The validated `websocket` block of route `index` at `path`: { connections, messages }, each null
 * when not given, as plain frozen data (buildWebSocketLimits turns it into limiters).
 * @param {any} raw
 * @param {string} path
 * @param {{ index: number; prefix: string; methods: readonly string[] }} route
 * @returns {WebSocketLimitsConfig}
 */
export function validateWebSocket(raw, path, { index, prefix, methods }) {
  expectObject(raw, path);
  expectKnownFields(raw, path, FIELDS);
  if (!methods.includes("GET")) throw new ConfigError(fieldPath(path, "connections"), "needs the route to allow GET: a WebSocket upgrade is a GET");
  if (raw.connections === undefined && raw.messages === undefined && raw.maxMessageBytes === undefined) {
    throw new ConfigError(fieldPath(path, "connections"), "is missing: give connections, messages, maxMessageBytes or several (or leave websocket out)");
  }
  const maxMessageBytes =
    raw.maxMessageBytes === undefined ? DEFAULT_MAX_MESSAGE_BYTES : expectInteger(raw.maxMessageBytes, fieldPath(path, "maxMessageBytes"), 1, MAX_MAX_MESSAGE_BYTES);
  /** @type {WebSocketLimitsConfig["connections"]} */
  let connections = null;
  if (raw.connections !== undefined) {
    const at = fieldPath(path, "connections");
    expectObject(raw.connections, at);
    expectKnownFields(raw.connections, at, CONNECTION_FIELDS);
    if (raw.connections.max === undefined) throw new ConfigError(fieldPath(at, "max"), "is required: how many connections a client may hold open");
    if (raw.connections.key === undefined) throw new ConfigError(fieldPath(at, "key"), "is required: whose connections are counted (ip, user, ...)");
    connections = Object.freeze({
      name: `ws:${prefix}`.slice(0, 64),
      max: expectInteger(raw.connections.max, fieldPath(at, "max"), 1, 2 ** 16),
      key: Object.freeze(validateKey(raw.connections.key, fieldPath(at, "key"))),
      leaseSec: raw.connections.leaseSec === undefined ? 60 : expectNumber(raw.connections.leaseSec, fieldPath(at, "leaseSec"), 0.001, 2 ** 31 / 1000),
      store: raw.connections.store === undefined ? "memory" : expectOneOf(raw.connections.store, fieldPath(at, "store"), CONNECTION_STORES),
      timeoutMs: raw.connections.timeoutMs === undefined ? undefined : expectInteger(raw.connections.timeoutMs, fieldPath(at, "timeoutMs"), 1, 60_000),
      status: raw.connections.status === undefined ? 429 : expectInteger(raw.connections.status, fieldPath(at, "status"), 400, 599),
    });
  }
  /** @type {WebSocketLimitsConfig["messages"]} */
  let messages = null;
  if (raw.messages !== undefined) {
    const at = fieldPath(path, "messages");
    expectObject(raw.messages, at);
    expectKnownFields(raw.messages, at, MESSAGE_FIELDS);
    messages = Object.freeze({ name: `gw-ws-${index}`, ...structuredClone(raw.messages) });
  }
  const validated = Object.freeze({ connections, messages, maxMessageBytes });
  // The host checks the numbers (and the isolate's table budget) now, so a bad one fails at start-up.
  buildWebSocketLimits(validated, path, () => undefined);
  return validated;
}

/**
 * buildWebSocketLimits returns { connections, messages }: a concurrency engine and a message limiter
 * (each null when not configured), with `keyOf(parts)` making the key function of a connections key.
 * @param {WebSocketLimitsConfig} websocket
 * @param {string} path
 * @param {(parts: readonly string[]) => any} keyOf
 * @returns {{ connections: ReturnType<typeof createConcurrencyEngine> | null; messages: ReturnType<typeof createMessageLimiter> | null }}
 */
export function buildWebSocketLimits(websocket, path, keyOf) {
  const wanted = websocket.connections;
  const connections =
    wanted === null
      ? null
      : hostValidated(fieldPath(path, "connections"), () => {
          const { name, max, key, leaseSec, store, timeoutMs, status } = wanted;
          return createConcurrencyEngine({
            name,
            max,
            key: keyOf(key) ?? "validation",
            leaseSec,
            store,
            status,
            code: "sluice_too_many_connections",
            ...(store === "durable" ? { timeoutMs: timeoutMs ?? 1_000 } : {}),
          });
        });
  const messageOptions = websocket.messages;
  const messages = messageOptions === null ? null : hostValidated(fieldPath(path, "messages"), () => createMessageLimiter(messageOptions));
  return { connections, messages };
}
