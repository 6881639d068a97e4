// Whether a request's credentials can be read one way only, on a route keyed by "user".
//
// The `user` key part is the bearer token (limiter.js), else the client's IP. A header the gateway
// cannot read as one token (`Bearer tok x`, `Basic ...`, two headers joined by a comma, a token with
// characters RFC 6750 does not allow) would be keyed by IP here, while an upstream splitting on spaces
// or reading another scheme sees a user: every such spelling would be a budget of its own (issue 23).
// Such a request is refused (400) rather than guessed at: no upstream reading is universal.

// RFC 6750 §2.1: "Bearer" 1*SP b64token, where b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~"
// / "+" / "/" ) *"="; exactly one space, nothing after the token.
const BEARER_CREDENTIALS = /^Bearer [A-Za-z0-9\-._~+/]+=*$/i;

/**
 * wellFormedCredentials says whether an Authorization header value (null when absent) is absent or
 * exactly one well-formed Bearer token.
 * @param {string | null} value
 * @returns {boolean}
 */
export function wellFormedCredentials(value) {
  return value === null || BEARER_CREDENTIALS.test(value);
}
