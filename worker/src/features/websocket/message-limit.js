// Limits on the messages of an open WebSocket: per connection and per key (a user, an IP), decided by
// the core's rate rules in the isolate's instance. A message over the limit is dropped and the client
// told: an error frame, or a close (1008 policy violation by default, or 4429) after N violations.
//
//   const messages = createMessageLimiter({ perConnection: { limit: 20, windowSec: 10 }, onLimited: "close" });
//   const gate = messages.connection(userId);
//   server.addEventListener("message", (event) => { if (gate.admit(server)) handle(event.data); });
import { nowMs } from "../../engine/clock.js";
import { SluiceConfigError, describe } from "../../engine/errors.js";
import { declareTables, decideInIsolate, exportKeyState, importKeyState, memoryTable } from "../../engine/isolate.js";
import { normalizeRuleSpec } from "../../engine/options.js";

/** @import { NormalizedRule, StoreCheck } from "../../stores/store.js" */

const FIELDS = ["name", "perConnection", "perKey", "onLimited", "closeAfter", "closeCode", "closeReason", "errorFrame", "clock"];
const RULE_FIELDS = ["limit", "windowSec", "windowMs", "algorithm", "keyCapacity"];

/**
 * @typedef {object} MessageRule
 * @property {number} limit messages per window
 * @property {number} [windowSec] the window, in seconds (or windowMs)
 * @property {number} [windowMs]
 * @property {string} [algorithm] any rate algorithm (default "sliding-counter")
 * @property {number} [keyCapacity] connections (or keys) the isolate's table holds
 */

/**
 * @typedef {object} MessageLimitOptions
 * @property {string} [name] names the rules (default "ws-messages"); limiters with one name share counts
 * @property {MessageRule} [perConnection] messages per window on one connection
 * @property {MessageRule} [perKey] messages per window on all connections of one key, in this isolate
 * @property {"error"|"close"} [onLimited] tell the client with an error frame (default), or close the socket
 * @property {number} [closeAfter] close after this many dropped messages (default 1 with "close"; none with "error")
 * @property {number} [closeCode] 1008 (policy violation, default) or a private code 4000-4999 (4429)
 * @property {string} [closeReason] default "message rate limit exceeded"
 * @property {(decision: object) => string} [errorFrame] the error frame's text (default a JSON object)
 * @property {() => number} [clock] milliseconds since the epoch (tests)
 */

/**
 * @typedef {object} GateSnapshot what a gate needs to carry on after a Durable Object hibernates
 * @property {string} id
 * @property {number} violations
 * @property {Uint8Array|null} connectionState the per-connection rule's state bytes
 */

/**
 * What a gate answers the client through: a WebSocket, or Hono's WSContext.
 * @typedef {{ send(data: string): void, close(code?: number, reason?: string): void }} MessageSocket
 */

/**
 * One connection's gate.
 * @typedef {object} MessageGate
 * @property {string} id the connection's id (its per-connection count's key)
 * @property {string} key the key its per-key count is kept under
 * @property {number} violations messages dropped so far
 * @property {(socket: MessageSocket) => boolean} admit counts one message; false: drop it (the client has been told)
 * @property {() => GateSnapshot} snapshot what to keep in a hibernatable socket's attachment
 */

/**
 * @typedef {object} MessageLimiter
 * @property {(key: string, snapshot?: GateSnapshot) => MessageGate} connection the gate of one new (or woken) connection
 * @property {{ admitted: number; dropped: number; closed: number }} counters
 */

/** @param {unknown} spec @param {string} field @param {string} name @returns {NormalizedRule | null} */
function ruleOf(spec, field, name) {
  if (spec === undefined) return null;
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
    throw new SluiceConfigError(field, `must be an object { limit, windowSec }; got ${describe(spec)}`);
  }
  for (const key of Object.keys(spec)) {
    if (!RULE_FIELDS.includes(key)) throw new SluiceConfigError(`${field}.${key}`, `is not an option (known: ${RULE_FIELDS.join(", ")})`);
  }
  const rule = normalizeRuleSpec({ keyCapacity: 10_000, ...spec, name: `${name}-${field}` }, `${field}.`);
  const problem = declareTables([memoryTable(rule)]);
  if (problem !== undefined) throw new SluiceConfigError(`${field}.keyCapacity`, problem);
  return rule;
}

function randomId() {
  const words = crypto.getRandomValues(new Uint32Array(3));
  return `ws:${words[0].toString(36)}${words[1].toString(36)}${words[2].toString(36)}`;
}

/** @param {{ retryAfterMs: number }} decision @returns {string} */
function defaultErrorFrame(decision) {
  return JSON.stringify({ error: "rate_limited", retryAfter: Math.max(1, Math.ceil(decision.retryAfterMs / 1000)) });
}

/**
 * createMessageLimiter validates `options` (a SluiceConfigError names the field) and returns
 * { connection(key, snapshot?), counters }.
 * @param {MessageLimitOptions} options
 * @returns {MessageLimiter}
 */
export function createMessageLimiter(options) {
  if (options === null || typeof options !== "object") throw new SluiceConfigError("options", `must be an object; got ${describe(options)}`);
  for (const key of Object.keys(options)) {
    if (!FIELDS.includes(key)) throw new SluiceConfigError(key, `is not an option of createMessageLimiter (known: ${FIELDS.join(", ")})`);
  }
  const name = options.name ?? "ws-messages";
  if (typeof name !== "string" || name === "" || name.includes("|")) throw new SluiceConfigError("name", `must be a non-empty string without '|'; got ${describe(name)}`);
  const perConnection = ruleOf(options.perConnection, "perConnection", name);
  const perKey = ruleOf(options.perKey, "perKey", name);
  if (perConnection === null && perKey === null) throw new SluiceConfigError("perConnection", "is missing: give perConnection, perKey or both");
  const onLimited = options.onLimited ?? "error";
  if (onLimited !== "error" && onLimited !== "close") throw new SluiceConfigError("onLimited", `must be 'error' or 'close'; got ${describe(onLimited)}`);
  const closeAfter = options.closeAfter ?? (onLimited === "close" ? 1 : Infinity);
  if (closeAfter !== Infinity && !(Number.isInteger(closeAfter) && closeAfter >= 1)) {
    throw new SluiceConfigError("closeAfter", `must be a whole number of dropped messages, at least 1; got ${describe(closeAfter)}`);
  }
  const closeCode = options.closeCode ?? 1008;
  if (!(closeCode === 1008 || (Number.isInteger(closeCode) && closeCode >= 4000 && closeCode <= 4999))) {
    throw new SluiceConfigError("closeCode", `must be 1008 (policy violation) or a private code from 4000 to 4999 (such as 4429); got ${describe(closeCode)}`);
  }
  const closeReason = options.closeReason ?? "message rate limit exceeded";
  if (typeof closeReason !== "string" || new TextEncoder().encode(closeReason).length > 123) {
    throw new SluiceConfigError("closeReason", "must be a string of at most 123 UTF-8 bytes (a close frame's limit)");
  }
  const errorFrame = options.errorFrame ?? defaultErrorFrame;
  if (typeof errorFrame !== "function") throw new SluiceConfigError("errorFrame", `must be a function (decision) => string; got ${describe(errorFrame)}`);
  const clock = options.clock ?? nowMs;
  if (typeof clock !== "function") throw new SluiceConfigError("clock", `must be a function; got ${describe(clock)}`);

  const counters = { admitted: 0, dropped: 0, closed: 0 };

  /**
   * connection returns the gate of one connection of `key` (a string: the user, the IP); pass the
   * snapshot() a gate saved to carry on after hibernation.
   * @param {string} key
   * @param {GateSnapshot} [snapshot]
   * @returns {MessageGate}
   */
  function connection(key, snapshot) {
    if (typeof key !== "string" || key === "") throw new TypeError(`sluice: a message gate's key must be a non-empty string; got ${describe(key)}`);
    const id = snapshot?.id ?? randomId();
    let violations = snapshot?.violations ?? 0;
    let closed = false;
    if (perConnection !== null && snapshot?.connectionState) importKeyState(perConnection, id, new Uint8Array(snapshot.connectionState));
    /** @type {StoreCheck[]} */
    const checks = [];
    if (perConnection !== null) checks.push({ rule: perConnection, key: id, cost: 1 });
    if (perKey !== null) checks.push({ rule: perKey, key, cost: 1 });

    return {
      id,
      key,
      get violations() {
        return violations;
      },
      /**
       * admit counts one message from the client of `socket` (a WebSocket, or Hono's WSContext) and
       * reports whether to handle it. Over the limit it is dropped, and the client gets an error frame
       * or, after closeAfter drops, a close with closeCode.
       */
      admit(socket) {
        if (closed) return false;
        const decision = decideInIsolate(checks, Math.floor(clock()));
        if (decision.allowed) {
          counters.admitted++;
          return true;
        }
        counters.dropped++;
        violations++;
        if (violations >= closeAfter) {
          closed = true;
          counters.closed++;
          try {
            socket.close(closeCode, closeReason);
          } catch {
            // Already closing.
          }
        } else {
          try {
            socket.send(errorFrame(decision));
          } catch {
            // The socket is going away.
          }
        }
        return false;
      },
      /** snapshot is what to keep in the socket's attachment (serializeAttachment) to survive hibernation. */
      snapshot() {
        return { id, violations, connectionState: perConnection === null ? null : exportKeyState(perConnection, id) };
      },
    };
  }

  return Object.freeze({ connection, counters });
}

/**
 * limitMessages wraps the events of Hono's upgradeWebSocket so that onMessage only sees admitted messages:
 *
 *   app.get("/ws", upgradeWebSocket((c) => limitMessages(messages.connection(ipOf(c)), { onMessage(event, ws) { ... } })));
 * @template {{ onMessage?: (event: any, ws: any) => unknown }} Events
 * @param {MessageGate} gate
 * @param {Events} events
 * @returns {Events}
 */
export function limitMessages(gate, events) {
  const { onMessage } = events;
  return {
    ...events,
    onMessage(event, ws) {
      if (!gate.admit(ws)) return;
      if (onMessage !== undefined) return onMessage(event, ws);
    },
  };
}

/** ChunkLimitError fails a stream whose chunks came faster than its gate admits. */
export class ChunkLimitError extends Error {
  constructor() {
    super("sluice: chunk rate limit exceeded");
    this.name = "ChunkLimitError";
  }
}

/**
 * limitChunks returns `body` (a streaming request body, say) with every chunk counted by `gate` as a
 * message: a chunk over the limit fails the stream with ChunkLimitError, since dropping part of a body
 * would corrupt it. Chunks are whatever the runtime delivers (no re-chunking).
 * @param {ReadableStream} body
 * @param {MessageGate} gate
 * @returns {ReadableStream}
 */
export function limitChunks(body, gate) {
  // A gate tells the client through a socket; a stream has none: its failure is the answer.
  const silent = { send() {}, close() {} };
  return body.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        if (gate.admit(silent)) controller.enqueue(chunk);
        else controller.error(new ChunkLimitError());
      },
    }),
  );
}
