// "Did you mean": the options other rate limiters spell differently (express-rate-limit,
// hono-rate-limiter, @upstash/ratelimit, rate-limiter-flexible), with sluice's spelling, so an unknown
// option from a migration names what to write instead. Only consulted when an option is refused.

/** @type {Readonly<Record<string, string>>} */
const PEER_OPTIONS = Object.freeze({
  max: "limit",
  points: "limit",
  tokens: "limit",
  requests: "limit",
  keyGenerator: "key (a key function such as ip(), user(fn), apiKey())",
  identifier: "key (a key function such as ip(), user(fn), apiKey())",
  window: "windowSec (or windowMs)",
  duration: "windowSec (or windowMs)",
  interval: "windowSec (or windowMs)",
  windowSeconds: "windowSec",
  message: "onLimited (builds the 429's response) or code (the 429 body's \"code\")",
  statusCode: "onLimited (a denial answers 429 unless onLimited returns another response)",
  handler: "onLimited",
  standardHeaders: "headers (\"draft-6\", \"draft-7\", \"draft-8\", \"draft\", \"legacy\", \"both\" or \"none\")",
  legacyHeaders: "headers (\"legacy\" or \"both\" send X-RateLimit-*)",
  requestPropertyName: "nothing: the decision is c.get(\"rateLimit\"), or what limiter.limit() returns",
  limiter: "algorithm, with limit and windowSec (or rate)",
  timeout: "timeoutMs",
  prefix: "name (rules with one name share their counts)",
  keyPrefix: "name (rules with one name share their counts)",
  skipFailedRequests: "nothing: sluice charges when it decides, before the handler runs",
  skipSuccessfulRequests: "nothing: sluice charges when it decides, before the handler runs (lockout() counts failures)",
  blockDuration: "lockout() (docs/lockout.md), which locks for a time after failures",
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
