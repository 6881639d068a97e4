// "Did you mean": the options other rate limiters spell differently (express-rate-limit,
// hono-rate-limiter, @upstash/ratelimit, rate-limiter-flexible), with sluice's spelling, so an unknown
// option from a migration names what to write instead. Only consulted when an option is refused.

const KEY = "key (ip(), user(fn), apiKey(), ...)";
const WINDOW = "windowSec (or windowMs)";
const ON_LIMITED = "onLimited";
const HEADERS = 'headers ("draft-6", "draft-7", "draft-8", "legacy", ...)';
// Counting on the response has a middleware and a limiter of its own, so that only apps that use it
// bundle it: rateLimit and createLimiter name them for its options.
const ON_RESPONSE = 'rateLimitOnResponse({ ... }) from "sluice/hono" (or createResponseLimiter from "sluice"), which counts on the response';

/** @type {Readonly<Record<string, string>>} */
const PEER_OPTIONS = Object.freeze({
  max: "limit",
  points: "limit",
  tokens: "limit",
  requests: "limit",
  keyGenerator: KEY,
  identifier: KEY,
  window: WINDOW,
  duration: WINDOW,
  interval: WINDOW,
  windowSeconds: "windowSec",
  message: `${ON_LIMITED} (or code, the 429 body's "code")`,
  statusCode: ON_LIMITED,
  handler: ON_LIMITED,
  standardHeaders: HEADERS,
  legacyHeaders: HEADERS,
  requestPropertyName: 'nothing: the decision is c.get("rateLimit")',
  limiter: "algorithm, with limit and windowSec",
  timeout: "timeoutMs",
  prefix: "name",
  keyPrefix: "name",
  skipFailedRequests: ON_RESPONSE,
  skipSuccessfulRequests: ON_RESPONSE,
  countWhen: ON_RESPONSE,
  costFrom: ON_RESPONSE,
  blockDuration: "lockout()",
});

/**
 * suggestion returns what to write instead of the unknown option `field`, given the `known` options:
 * a known option differing only in case, or sluice's spelling of a peer's option; undefined if none.
 * @param {string} field
 * @param {readonly string[]} known
 * @returns {string | undefined}
 */
export function suggestion(field, known) {
  const sameLetters = known.find((name) => name.toLowerCase() === field.toLowerCase());
  if (sameLetters !== undefined) return sameLetters;
  return Object.hasOwn(PEER_OPTIONS, field) ? PEER_OPTIONS[field] : undefined;
}
