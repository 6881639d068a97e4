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
