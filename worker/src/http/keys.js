// Key helpers: functions from a request to the text a limit is counted under.
//
// A key function receives what the limiter was given: a Hono context `c` in the middleware, or
// `(request, env, ctx)` with createLimiter. Helpers accept both. A part that has nothing to say (no
// user, no API key) returns undefined; when the whole key comes out empty, the request is counted under
// one shared "unknown" key, never let through unlimited.
import { canonicalAddress, cidrMatcher } from "./addresses.js";
import { SluiceConfigError, describe } from "../engine/errors.js";
import { canonicalPath } from "./paths.js";

/**
 * What a key function may answer; undefined, null and "" mean "nothing to say".
 * @typedef {string | number | null | undefined} KeyPart
 */
/**
 * What key helpers read the request from: a Hono context, or the Request itself (createLimiter).
 * @typedef {Request | { req: { raw: Request } }} KeyInput
 */
/**
 * A key function receives what the limiter was given: `(c)` in the Hono middleware,
 * `(request, env, ctx)` with createLimiter.
 * @template {unknown[]} [Args=any[]]
 * @typedef {(...args: Args) => KeyPart | Promise<KeyPart>} KeyFunction
 */
/**
 * The `key` option: a fixed key, a key function, or parts composed into one key.
 * @template {unknown[]} [Args=any[]]
 * @typedef {string | KeyFunction<Args> | ReadonlyArray<string | KeyFunction<Args>>} KeySource
 */
/**
 * A key helper: works in the middleware and with createLimiter alike.
 * @typedef {(input: KeyInput, ...rest: unknown[]) => KeyPart | Promise<KeyPart>} KeyHelper
 */
/**
 * @typedef {object} IpOptions
 * @property {boolean | number | readonly string[]} [trustForwardedFor] Which proxies in front to believe about
 *   x-forwarded-for: false (default: none), a number of proxies you run (true is 1; the client is the
 *   address the outermost appended), or their CIDR blocks.
 * @property {number} [ipv6Prefix] IPv6 addresses are grouped by this many leading bits, 1 to 128. Default 64.
 */

/** The key every request without a usable key shares. */
export const UNKNOWN_KEY = /** @type {const} */ ("unknown");
/** The most UTF-8 bytes a key may have in the core; longer keys are hashed with SHA-256. */
export const MAX_KEY_BYTES = /** @type {const} */ (512);

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

// The pattern of the route that handles the request ("/posts/:id"): the last route Hono matched, as
// routePath(c, -1) from "hono/route" gives it. Read from the context, so that this module (and with
// it the framework-free entry "sluice") never imports hono, an optional peer dependency.
/** @param {{ req: { matchedRoutes: { path: string }[] } }} c @returns {string} */
function matchedRoutePattern(c) {
  return c.req.matchedRoutes.at(-1)?.path ?? "";
}

// A Hono context carries the Request as c.req.raw; createLimiter passes the Request itself.
/** @param {any} input @returns {Request} */
export function requestOf(input) {
  return input !== null && typeof input === "object" && input.req !== undefined && input.req.raw !== undefined
    ? input.req.raw
    : input;
}

/** @param {any} input @returns {boolean} */
function isHonoContext(input) {
  return input !== null && typeof input === "object" && input.req !== undefined && input.req.raw !== undefined;
}

// "|" joins composed parts and "%" escapes: a value containing either is escaped, so no part's value
// can pass for another part ("a|b" + "c" never equals "a" + "b|c").
/** @param {string} text */
export function escapePart(text) {
  return /[%|]/.test(text) ? text.replace(/%/g, "%25").replace(/\|/g, "%7C") : text;
}

/**
 * @param {unknown} value
 * @returns {value is PromiseLike<any>}
 */
function isPromise(value) {
  return value !== null && typeof value === "object" && typeof (/** @type {{ then?: unknown }} */ (value)).then === "function";
}

/** @param {unknown} value @returns {string | undefined} */
export function textOf(value) {
  if (value === undefined || value === null) return undefined;
  const text = typeof value === "string" ? value : String(value);
  return text === "" ? undefined : text;
}

// The most X-Forwarded-For entries looked at: a longer header is a client padding it.
const MAX_FORWARDED_ENTRIES = 32;
const MAX_TRUSTED_HOPS = 16;

// How far X-Forwarded-For is believed: a function (headers) -> the client's address text, or null.
/** @param {boolean | number | readonly string[]} trustForwardedFor @returns {((headers: Headers) => string | null) | null} */
function forwardedReader(trustForwardedFor) {
  if (trustForwardedFor === false) return null;
  const peer = (/** @type {Headers} */ headers) => headers.get("cf-connecting-ip");
  const entries = (/** @type {Headers} */ headers) => {
    const value = headers.get("x-forwarded-for");
    if (value === null) return [];
    const list = value.split(",").map((/** @type {string} */ entry) => entry.trim());
    return list.length > MAX_FORWARDED_ENTRIES ? null : list;
  };
  if (Array.isArray(trustForwardedFor)) {
    const trusted = cidrMatcher(trustForwardedFor);
    if (trusted.problem !== undefined) throw new SluiceConfigError("ip({ trustForwardedFor })", trusted.problem);
    // Walk back from the connecting address while each hop is a trusted proxy; the first address
    // that is not one is the client (an unreadable entry stops the walk at the proxy that wrote it).
    return (/** @type {Headers} */ headers) => {
      let client = peer(headers);
      if (!trusted.matches(client)) return client;
      const list = entries(headers);
      if (list === null) return client;
      for (let i = list.length - 1; i >= 0; i--) {
        if (canonicalAddress(list[i]) === null) return client;
        client = list[i];
        if (!trusted.matches(client)) return client;
      }
      return client;
    };
  }
  // Array.isArray does not narrow a readonly array away: what is left is true or a number (checked next).
  const hops = /** @type {number} */ (trustForwardedFor === true ? 1 : trustForwardedFor);
  if (!Number.isInteger(hops) || hops < 1 || hops > MAX_TRUSTED_HOPS) {
    throw new SluiceConfigError(
      "ip({ trustForwardedFor })",
      `must be false, true (one proxy), the number of proxies in front (1 to ${MAX_TRUSTED_HOPS}) or a list of their CIDR blocks; got ${describe(trustForwardedFor)}`,
    );
  }
  // `hops` proxies of yours in front, each appending the address it saw: the client is the entry the
  // outermost one appended, `hops` from the right; entries further left were written by the client.
  // An entry equal to the connecting address at the very end was appended by Cloudflare (it appends
  // the address that connected to it), not by a proxy of yours, and is not counted. Fewer entries, or
  // an unreadable one: the furthest address a proxy of yours vouches for is used.
  return (/** @type {Headers} */ headers) => {
    let client = peer(headers);
    let list = entries(headers);
    if (list === null) return client;
    if (list.length > 0 && client !== null && canonicalAddress(list[list.length - 1], 128) === canonicalAddress(client, 128)) {
      list = list.slice(0, -1);
    }
    for (let k = 1; k <= hops && k <= list.length; k++) {
      const entry = list[list.length - k];
      if (canonicalAddress(entry) === null) return client;
      client = entry;
    }
    return client;
  };
}

/**
 * ip keys a request by its client address: `cf-connecting-ip`, which Cloudflare sets and clients
 * cannot, unless `trustForwardedFor` says which proxies in front of the Worker to believe about
 * `x-forwarded-for` (as express's `trust proxy` does):
 *  - false (default): none; x-forwarded-for is ignored;
 *  - a number n (true is 1): n proxies you run are in front, each appending the address it saw; the
 *    client is the address the outermost appended (n-th from the right), never the first entry, which
 *    the client writes itself. Safe only if the Worker cannot be reached without them;
 *  - a list of CIDR blocks ("10.0.0.0/8", "2001:db8::/32"): from the connecting address back through
 *    x-forwarded-for, every address inside them is a proxy of yours; the first one outside is the client.
 * An entry that is not an address ends the search at the proxy that wrote it (its address is used).
 * IPv6 addresses are grouped by their first `ipv6Prefix` bits (one subscriber usually holds a whole
 * /64); IPv4-mapped IPv6 addresses count as IPv4. A request with no usable address is keyed
 * "ip:unknown", shared by all such requests.
 * @param {IpOptions} [options]
 * @returns {KeyHelper}
 */
export function ip({ trustForwardedFor = false, ipv6Prefix = 64 } = {}) {
  if (typeof trustForwardedFor !== "boolean" && typeof trustForwardedFor !== "number" && !Array.isArray(trustForwardedFor)) {
    throw new SluiceConfigError("ip({ trustForwardedFor })", `must be true or false, a number of proxies or a list of CIDR blocks; got ${describe(trustForwardedFor)}`);
  }
  if (!Number.isInteger(ipv6Prefix) || ipv6Prefix < 1 || ipv6Prefix > 128) {
    throw new SluiceConfigError("ip({ ipv6Prefix })", `must be a whole number from 1 to 128; got ${describe(ipv6Prefix)}`);
  }
  const forwarded = forwardedReader(trustForwardedFor);
  /** @param {KeyInput} input */
  return function ipKey(input) {
    const headers = requestOf(input).headers;
    const address = canonicalAddress(forwarded === null ? headers.get("cf-connecting-ip") : forwarded(headers), ipv6Prefix);
    return `ip:${address ?? UNKNOWN_KEY}`;
  };
}

/**
 * user keys a request by the user id `identify` returns for it (given the same arguments as a key
 * function; it may be async). No id (undefined, null, "") gives no key part: combine with firstOf()
 * to fall back to another key. From `sluice`, `identify` receives createLimiter's (request, env, ctx)
 * unless the limiter's Env is given (createLimiter<Env>); sluice/hono's user receives the context.
 * @template {unknown[]} [Args=[request: Request, env: unknown, ctx: unknown]]
 * @param {(...args: Args) => KeyPart | Promise<KeyPart>} identify
 * @returns {KeyFunction<Args>}
 */
export function user(identify) {
  if (typeof identify !== "function") {
    throw new SluiceConfigError("user(identify)", `must be a function returning the user id; got ${describe(identify)}`);
  }
  /** @param {KeyPart} id */
  const label = (id) => {
    const text = textOf(id);
    return text === undefined ? undefined : `user:${escapePart(text)}`;
  };
  /** @param {Args} args */
  return function userKey(...args) {
    const id = identify(...args);
    return isPromise(id) ? id.then(label) : label(id);
  };
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * bearerToken is the token of an `Authorization: Bearer <token>` header, or undefined. Not verified:
 * as a user id (user(bearerToken)) it suits a demo, or a token something in front has checked; a
 * client can send any token it likes, so pair such a key with an ip() rule.
 * @param {KeyInput} input
 * @returns {string | undefined}
 */
export function bearerToken(input) {
  const match = BEARER.exec(requestOf(input).headers.get("authorization") ?? "");
  return match === null ? undefined : match[1];
}

/**
 * apiKey keys a request by the value of its `header` (default "x-api-key"); absent gives no key part.
 * @param {string} [header]
 * @returns {KeyHelper}
 */
export function apiKey(header = "x-api-key") {
  if (typeof header !== "string" || !HEADER_NAME.test(header)) {
    throw new SluiceConfigError("apiKey(header)", `must be an HTTP header name; got ${describe(header)}`);
  }
  /** @param {KeyInput} input */
  return function apiKeyKey(input) {
    const value = textOf(requestOf(input).headers.get(header)?.trim());
    return value === undefined ? undefined : `key:${escapePart(value)}`;
  };
}

/** The route key of every path that has no canonical form (paths.js): they all share one. */
export const REFUSED_PATH_KEY = "route:!refused";

// The path's canonical form (paths.js), ASCII letters folded to lower case: an app that routes without
// regard to case (many do) must not give each spelling of one path a budget of its own.
/** @param {string} pathname @returns {string} */
function pathKey(pathname) {
  const canonical = canonicalPath(pathname);
  if (canonical.problem !== undefined) return REFUSED_PATH_KEY;
  return `route:${escapePart(canonical.path.replace(/[A-Z]+/g, (letters) => letters.toLowerCase()))}`;
}

/**
 * route keys a request by the route that serves it: in Hono the matched route's pattern
 * ("/posts/:id"), so varying a path parameter cannot split a limit; with createLimiter the URL's path
 * in canonical form (paths.js: escapes of plain characters decoded, other escapes' hex upper-cased,
 * letters folded to lower case), so re-spelling a path cannot split a limit either; a path with no
 * canonical form (an encoded slash, a matrix parameter, ...) shares the one key "route:!refused".
 * route(pattern) keys by `pattern` itself, whatever the path: for a limiter that serves one route (a
 * gateway route's prefix), where keying by the path would let a client split its limit by varying it.
 * @param {string} [pattern]
 * @returns {KeyHelper}
 */
export function route(pattern) {
  if (pattern !== undefined) {
    if (typeof pattern !== "string" || pattern === "") {
      throw new SluiceConfigError("route(pattern)", `must be a non-empty string such as "/v1/geo"; got ${describe(pattern)}`);
    }
    const key = `route:${escapePart(pattern)}`;
    return function fixedRouteKey() {
      return key;
    };
  }
  /** @param {KeyInput} input */
  return function routeKey(input) {
    if (isHonoContext(input)) return `route:${escapePart(matchedRoutePattern(/** @type {any} */ (input)))}`;
    return pathKey(new URL(requestOf(input).url).pathname);
  };
}

/**
 * compose joins several key parts into one key ("ip:192.0.2.1|route:/data"); a part with nothing to
 * say is written "unknown". An array given as `key` is composed the same way.
 * @template {unknown[]} Args
 * @param {...(string | KeyFunction<Args>)} parts
 * @returns {KeyFunction<Args>}
 */
export function compose(...parts) {
  const functions = parts.map((part, i) => toKeyFunction(part, `compose(...)[${i}]`));
  /** @param {any[]} args */
  return function composedKey(...args) {
    const values = functions.map((fn) => fn(...args));
    /** @param {KeyPart[]} resolved */
    const join = (resolved) => resolved.map((value) => textOf(value) ?? UNKNOWN_KEY).join("|");
    return values.some(isPromise) ? Promise.all(values).then(join) : join(/** @type {KeyPart[]} */ (values));

  };
}

/**
 * firstOf uses the first part that has something to say: firstOf(user(fn), ip()).
 * @template {unknown[]} Args
 * @param {...(string | KeyFunction<Args>)} parts
 * @returns {KeyFunction<Args>}
 */
export function firstOf(...parts) {
  const functions = parts.map((part, i) => toKeyFunction(part, `firstOf(...)[${i}]`));
  /**
   * @param {number} from
   * @param {any[]} args
   * @returns {KeyPart | Promise<KeyPart>}
   */
  const search = (from, args) => {
    for (let i = from; i < functions.length; i++) {
      const value = functions[i](...args);
      // Async parts are rare (a token lookup): only then does the search continue asynchronously.
      if (isPromise(value)) return value.then((resolved) => textOf(resolved) ?? search(i + 1, args));
      const text = textOf(value);
      if (text !== undefined) return text;
    }
    return undefined;
  };
  /** @param {any[]} args */
  return function firstKey(...args) {
    return search(0, args);
  };
}

/**
 * toKeyFunction turns a `key` option into a key function: a string is a fixed key (every request
 * shares it), a function is used as it is, an array is composed. `field` names the option in errors.
 * @param {unknown} source
 * @param {string} field
 * @returns {KeyFunction}
 */
export function toKeyFunction(source, field) {
  if (typeof source === "function") return /** @type {KeyFunction} */ (source);
  if (typeof source === "string") {
    if (source === "") throw new SluiceConfigError(field, "must not be empty");
    return () => source;
  }
  if (Array.isArray(source)) {
    if (source.length === 0) throw new SluiceConfigError(field, "must list at least one key part");
    return compose(...source);
  }
  throw new SluiceConfigError(field, `must be a key function (ip(), user(fn), ...), a string or an array of them; got ${describe(source)}`);
}

const utf8 = new TextEncoder();

/**
 * storeKey turns key text into what the core accepts: the text itself when it fits in 512 UTF-8 bytes,
 * else "sha256:" and the base64url SHA-256 of its bytes (a promise). Never truncated: two long keys
 * sharing their first 512 bytes stay apart.
 * @param {string} text
 * @returns {string | Promise<string>}
 */
export function storeKey(text) {
  // Up to 170 UTF-16 units can never exceed 512 bytes (at most 3 bytes a unit): no need to encode.
  if (text.length <= 170) return text;
  const bytes = utf8.encode(text);
  if (bytes.length <= MAX_KEY_BYTES) return text;
  return crypto.subtle.digest("SHA-256", bytes).then((digest) => `sha256:${base64url(new Uint8Array(digest))}`);
}

/** @param {Uint8Array} bytes */
function base64url(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * resolveKeyText calls a key function and normalizes its answer to text, "unknown" when empty.
 * @param {KeyFunction} keyFunction
 * @param {readonly unknown[]} args
 * @returns {string | Promise<string>}
 */
export function resolveKeyText(keyFunction, args) {

  const value = keyFunction(...args);
  return isPromise(value) ? value.then((resolved) => textOf(resolved) ?? UNKNOWN_KEY) : (textOf(value) ?? UNKNOWN_KEY);
}
