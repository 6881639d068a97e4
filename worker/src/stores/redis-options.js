// The Redis store's options: defaults applied once, every field checked when the store is built (a
// SluiceConfigError naming the field), and the REST URL and token read from env at first use.
import { nowMs as wallClockMs } from "../engine/clock.js";
import { SluiceConfigError, describe } from "../engine/errors.js";
import { checkTimeout } from "./deadline.js";
import { checkRoundTripOptions } from "./round-trip.js";

/** @import { RoundTripOptions } from "./round-trip.js" */

/** The env variables the REST URL and token are read from, by default (Upstash's own names). */
export const DEFAULT_REDIS_ENV = Object.freeze({ url: "UPSTASH_REDIS_REST_URL", token: "UPSTASH_REDIS_REST_TOKEN" });

// The learnt timeout's settings for Redis (round-trip.js's defaults, but for the first call): an
// isolate's first call to the REST URL opens a TLS connection (two or three round trips) and may find
// the script not loaded (EVALSHA, then EVAL), so it takes up to five round trips: 2.5 s holds a Redis
// 250 ms +-20 % away, where round-trip.js's 1 s would give it up (a denial, by default).
const REDIS_ROUND_TRIP = Object.freeze({ initialTimeoutMs: 2500 });

/**
 * @typedef {object} RedisStoreOptions
 * @property {string} [url] The REST URL; default: read from env[urlEnv] at first use.
 * @property {string} [token] The REST token; default: read from env[tokenEnv] at first use.
 * @property {string} [urlEnv] The env variable holding the URL. Default "UPSTASH_REDIS_REST_URL".
 * @property {string} [tokenEnv] The env variable holding the token. Default "UPSTASH_REDIS_REST_TOKEN".
 * @property {string} [prefix] Prepended to every Redis key. Default "sluice:".
 * @property {number} [clockToleranceMs] How far a decision's time may be from Redis's TIME. Default 250.
 * @property {number} [maxAttempts] Refused script calls per batch before giving up (the chain then falls back). Default 16.
 * @property {number} [reserveMs] How long an isolate that lost twice holds the keys for its next call. Default 1000.
 * @property {number} [maxCachedKeys] How many keys' last states the isolate remembers. Default 10000.
 * @property {number} [timeoutMs] Give a script call up after this long from its send (Infinity: wait). Default: learnt
 *   per REST URL from the measured round trips (`roundTrip`).
 * @property {RoundTripOptions} [roundTrip] The learnt timeout's settings. Default { initialTimeoutMs: 2500, floorMs: 200,
 *   minTimeoutMs: 300, maxTimeoutMs: 5000 } (round-trip.js's, but for the first call).
 * @property {typeof fetch} [fetch] The fetch function. Default globalThis.fetch.
 * @property {() => number} [clock] This isolate's clock (ms since the epoch). Default: the wall clock.
 */
/**
 * The options with their defaults, checked.
 * @typedef {{
 *   url: string | undefined, token: string | undefined, urlEnv: string, tokenEnv: string, prefix: string,
 *   clockToleranceMs: number, maxAttempts: number, reserveMs: number, maxCachedKeys: number,
 *   timeoutMs: number | undefined, roundTrip: Required<RoundTripOptions>, fetch: typeof fetch | undefined, clock: () => number,
 * }} RedisConfig
 */

/**
 * checkRedisOptions applies the defaults and checks every field (env-held values are checked at first
 * use, by resolveCredentials).
 * @param {RedisStoreOptions} options
 * @returns {RedisConfig}
 */
export function checkRedisOptions(options) {
  const {
    url,
    token,
    urlEnv = DEFAULT_REDIS_ENV.url,
    tokenEnv = DEFAULT_REDIS_ENV.token,
    prefix = "sluice:",
    clockToleranceMs = 250,
    maxAttempts = 16,
    reserveMs = 1000,
    maxCachedKeys = 10_000,
    timeoutMs,
    roundTrip,
    fetch,
    clock = wallClockMs,
  } = options;
  if (url !== undefined) checkUrl(url, "url");
  if (token !== undefined) checkToken(token, "token");
  checkName(urlEnv, "urlEnv");
  checkName(tokenEnv, "tokenEnv");
  if (typeof prefix !== "string") throw new SluiceConfigError("prefix", `must be a string; got ${describe(prefix)}`);
  if (typeof clockToleranceMs !== "number" || !(clockToleranceMs > 0) || clockToleranceMs === Infinity) {
    throw new SluiceConfigError("clockToleranceMs", `must be a finite number of milliseconds > 0; got ${describe(clockToleranceMs)}`);
  }
  checkWhole(maxAttempts, "maxAttempts");
  checkWhole(reserveMs, "reserveMs");
  checkWhole(maxCachedKeys, "maxCachedKeys");
  if (timeoutMs !== undefined) checkTimeout(timeoutMs, "timeoutMs");
  const checkedRoundTrip = checkRoundTripOptions({ ...REDIS_ROUND_TRIP, ...roundTrip }, "roundTrip");
  if (fetch !== undefined && typeof fetch !== "function") throw new SluiceConfigError("fetch", `must be a function; got ${describe(fetch)}`);
  if (typeof clock !== "function") throw new SluiceConfigError("clock", `must be a function returning ms since the epoch; got ${describe(clock)}`);
  return { url, token, urlEnv, tokenEnv, prefix, clockToleranceMs, maxAttempts, reserveMs, maxCachedKeys, timeoutMs, roundTrip: checkedRoundTrip, fetch, clock };
}

/**
 * resolveCredentials returns the URL and token in effect: given, or read from env (checked there, so
 * a missing or invalid secret throws a SluiceConfigError naming the env variable).
 * @param {RedisConfig} config
 * @param {unknown} env
 * @returns {{ url: string, token: string }}
 */
export function resolveCredentials(config, env) {
  const url = config.url ?? fromEnv(env, config.urlEnv);
  const token = config.token ?? fromEnv(env, config.tokenEnv);
  return { url, token };
}

/**
 * checkCredentials checks values read from env (given ones were checked when the store was built).
 * @param {RedisConfig} config
 * @param {{ url: string, token: string }} credentials
 */
export function checkCredentials(config, { url, token }) {
  if (config.url === undefined) checkUrl(url, `env.${config.urlEnv}`);
  if (config.token === undefined) checkToken(token, `env.${config.tokenEnv}`);
}

/**
 * isBound reports whether the URL and token are given or present in env.
 * @param {RedisConfig} config
 * @param {unknown} env
 * @returns {boolean}
 */
export function isBound(config, env) {
  return (config.url !== undefined || present(env, config.urlEnv)) && (config.token !== undefined || present(env, config.tokenEnv));
}

/**
 * @param {unknown} env
 * @param {string} name
 */
function present(env, name) {
  const value = envValue(env, name);
  return typeof value === "string" && value !== "";
}

/**
 * @param {unknown} env
 * @param {string} name
 * @returns {string}
 */
function fromEnv(env, name) {
  const value = envValue(env, name);
  if (value === undefined || value === null || value === "") {
    throw new SluiceConfigError(`env.${name}`, "is not set (the Redis store reads its REST URL and token from env; add it with wrangler secret put)");
  }
  return /** @type {string} */ (value);
}

/**
 * @param {unknown} env
 * @param {string} name
 * @returns {unknown}
 */
function envValue(env, name) {
  return env !== null && typeof env === "object" ? /** @type {Record<string, unknown>} */ (env)[name] : undefined;
}

/**
 * @param {unknown} value
 * @param {string} field
 */
function checkUrl(value, field) {
  /** @type {URL | null} */
  let parsed = null;
  if (typeof value === "string") {
    try {
      parsed = new URL(value);
    } catch {
      parsed = null;
    }
  }
  if (parsed === null || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
    throw new SluiceConfigError(field, `must be the database's REST URL (https://...); got ${describe(value)}`);
  }
}

/**
 * The token's value is never shown, not even in part.
 * @param {unknown} value
 * @param {string} field
 */
function checkToken(value, field) {
  if (typeof value !== "string" || value === "" || /[\s]/.test(value)) {
    throw new SluiceConfigError(field, `must be the database's REST token (a non-empty string without spaces); got ${typeof value === "string" ? "an invalid string" : describe(value)}`);
  }
}

/**
 * @param {unknown} value
 * @param {string} field
 */
function checkName(value, field) {
  if (typeof value !== "string" || value === "") throw new SluiceConfigError(field, `must name an env variable; got ${describe(value)}`);
}

/**
 * @param {unknown} value
 * @param {string} field
 */
function checkWhole(value, field) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new SluiceConfigError(field, `must be a whole number >= 1; got ${describe(value)}`);
  }
}
