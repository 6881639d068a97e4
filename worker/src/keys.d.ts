/** What a key function may answer; undefined, null and "" mean "nothing to say". */
export type KeyPart = string | number | null | undefined;

/** What key helpers read the request from: a Hono context, or the Request itself (createLimiter). */
export type KeyInput = Request | { req: { raw: Request } };

/**
 * A key function receives what the limiter was given: `(c)` in the Hono middleware,
 * `(request, env, ctx)` with createLimiter.
 */
export type KeyFunction<Args extends unknown[] = any[]> = (...args: Args) => KeyPart | Promise<KeyPart>;

/** The `key` option: a fixed key, a key function, or parts composed into one key. */
export type KeySource<Args extends unknown[] = any[]> = string | KeyFunction<Args> | ReadonlyArray<string | KeyFunction<Args>>;

/** A key helper: works in the middleware and with createLimiter alike. */
export type KeyHelper = (input: KeyInput, ...rest: unknown[]) => KeyPart | Promise<KeyPart>;

export interface IpOptions {
  /**
   * Which proxies in front to believe about x-forwarded-for: false (default: none), a number of proxies
   * you run (true is 1; the client is the address the outermost appended), or their CIDR blocks.
   */
  trustForwardedFor?: boolean | number | readonly string[];
  /** IPv6 addresses are grouped by this many leading bits, 1 to 128. Default 64. */
  ipv6Prefix?: number;
}

/** The key every request without a usable key shares. */
export declare const UNKNOWN_KEY: "unknown";
/** The most UTF-8 bytes a key may have in the core; longer keys are hashed with SHA-256. */
export declare const MAX_KEY_BYTES: 512;

/**
 * ip keys by client address: cf-connecting-ip (x-forwarded-for only with trustForwardedFor, and then the
 * address the nearest trusted proxy added); IPv6 grouped by prefix; IPv4-mapped IPv6 as IPv4; no usable
 * address -> "ip:unknown".
 */
export declare function ip(options?: IpOptions): KeyHelper;
/** user keys by the id `identify` returns ("user:<id>"); no id -> nothing (combine with firstOf). */
export declare function user<Args extends unknown[] = any[]>(identify: (...args: Args) => KeyPart | Promise<KeyPart>): KeyFunction<Args>;
/** apiKey keys by a header's value ("key:<value>"), default header x-api-key; absent -> nothing. */
export declare function apiKey(header?: string): KeyHelper;
/**
 * route keys by the matched Hono route pattern ("route:/posts/:id"), or the URL path with createLimiter;
 * route(pattern) keys by `pattern` whatever the path ("route:/v1/geo").
 */
export declare function route(pattern?: string): KeyHelper;
/** The token of "Authorization: Bearer <token>", or undefined; unverified (a client may send any). */
export declare function bearerToken(input: KeyInput): string | undefined;
/** compose joins parts into one key ("ip:192.0.2.1|route:/data"); a part with nothing is "unknown". */
export declare function compose(...parts: Array<string | KeyFunction>): KeyFunction;
/** firstOf uses the first part with something to say: firstOf(user(fn), ip()). */
export declare function firstOf(...parts: Array<string | KeyFunction>): KeyFunction;
