// What a Redis key of the Redis store holds: the core's exported state bytes as base64 text (the REST
// protocol is JSON), then a tag naming the write, `<state>.<tag>`. The tag is unique to each write, so
// no later write is ever mistaken for it (a take-back compares against it). "" stands for an absent key.

/** The script's new value that deletes a key (taking back a write that replaced an absent key). */
export const DELETE = "-";

/**
 * WriteTags names this store's writes: its ticket, then a number of its own.
 */
export class WriteTags {
  #writes = 0;

  /**
   * tagged is a key's new value: the state bytes and a tag naming this write, unique to it.
   * @param {string} state base64
   * @param {string} caller this store's ticket
   * @returns {string}
   */
  tagged(state, caller) {
    return `${state}.${caller.replaceAll("-", "").slice(0, 12)}${(++this.#writes).toString(36)}`;
  }
}

/**
 * stateOf is the state bytes (base64) of a key's value: the value without its write's tag.
 * @param {string} value
 * @returns {string}
 */
export function stateOf(value) {
  const dot = value.indexOf(".");
  return dot < 0 ? value : value.slice(0, dot);
}

/** @param {Uint8Array} bytes @returns {string} */
export function toBase64(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
  return btoa(binary);
}

/** @param {string} text @returns {Uint8Array} */
export function fromBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

// A contended key's value may be followed by a log (redis-append-script.js): the isolate keeps the two
// as one "view", `<value>\n<entry>\n<entry>...` (no value or entry holds a newline: base64, tags and
// JSON), so that a view passes wherever a value does (the state cache, a call's basis).

/**
 * viewOf joins a key's value and its log entries.
 * @param {string} value
 * @param {readonly string[]} log
 * @returns {string}
 */
export function viewOf(value, log) {
  return log.length === 0 ? value : `${value}\n${log.join("\n")}`;
}

/**
 * splitView is a view's value and log entries.
 * @param {string} view
 * @returns {{ value: string, log: string[] }}
 */
export function splitView(view) {
  const [value, ...log] = view.split("\n");
  return { value, log };
}

/**
 * One request as a log entry holds it: its one check's cost, and what it peeks, refills, lends and
 * gives back (redis-decide.js turns it back into the request for the key the log belongs to).
 * @typedef {{ c: number, p?: 1, r?: 1, l?: [units: number, leaseMs: number], g?: Array<[units: number, expiresAtMs: number]> }} EntryRequest
 */

/**
 * entryOf is what an append sends: the caller's tag, then its requests as JSON (the script puts
 * Redis's TIME in front).
 * @param {string} tag
 * @param {readonly EntryRequest[]} requests
 * @returns {string}
 */
export function entryOf(tag, requests) {
  return `${tag}|${JSON.stringify(requests)}`;
}

/**
 * tagOfEntry is a log entry's tag (unique to it: the appending store's ticket and write number).
 * @param {string} entry `<now>|<tag>|<requests>`
 * @returns {string}
 */
export function tagOfEntry(entry) {
  const first = entry.indexOf("|");
  return entry.slice(first + 1, entry.indexOf("|", first + 1));
}

/**
 * parseEntry reads a log entry `<now>|<tag>|<requests>`.
 * @param {string} entry
 * @returns {{ atMs: number, requests: EntryRequest[] }}
 */
export function parseEntry(entry) {
  const first = entry.indexOf("|");
  const second = entry.indexOf("|", first + 1);
  const atMs = Number(entry.slice(0, first));
  /** @type {unknown} */
  const requests = second > first ? JSON.parse(entry.slice(second + 1)) : null;
  if (!Number.isFinite(atMs) || !Array.isArray(requests)) throw new Error("redis store: a log entry is malformed");
  return { atMs, requests: /** @type {EntryRequest[]} */ (requests) };
}
