// The Redis store's key names. A key's state lives at `<prefix>s:<rule id>:<key>`, its hold at
// `<prefix>h:<rule id>:<key>` and its log (redis-append-script.js) at `<prefix>l:<rule id>:<key>`: the
// letter after the prefix keeps them apart whatever a client puts in its key.

/** @import { NormalizedRule } from "./store.js" */

/**
 * RedisKeys names the Redis keys of (rule, key) pairs under one prefix.
 */
export class RedisKeys {
  #prefix;

  /** @param {string} prefix */
  constructor(prefix) {
    this.#prefix = prefix;
  }

  /**
   * stateKeyOf is where a (rule, key) pair's state lives.
   * @param {{ rule: NormalizedRule, key: string }} check
   * @returns {string}
   */
  stateKeyOf(check) {
    return `${this.#prefix}s:${check.rule.id}:${check.key}`;
  }

  /** @param {string} stateKey @returns {string} the key of its hold */
  holdKeyOf(stateKey) {
    return `${this.#prefix}h:${stateKey.slice(this.#prefix.length + 2)}`;
  }

  /** @param {string} stateKey @returns {string} the key of its log */
  logKeyOf(stateKey) {
    return `${this.#prefix}l:${stateKey.slice(this.#prefix.length + 2)}`;
  }

  /**
   * redisKeysOf is the Redis keys of pairs, each once, sorted (a batch's identity).
   * @param {ReadonlyArray<{ rule: NormalizedRule, key: string }>} pairs
   * @returns {string[]}
   */
  redisKeysOf(pairs) {
    return [...new Set(pairs.map((pair) => this.stateKeyOf(pair)))].sort();
  }

  /**
   * scriptKeysOf is what a script is sent: the state keys, then their holds, then their logs.
   * @param {readonly string[]} keys
   * @returns {string[]}
   */
  scriptKeysOf(keys) {
    return [...keys, ...keys.map((key) => this.holdKeyOf(key)), ...keys.map((key) => this.logKeyOf(key))];
  }
}
