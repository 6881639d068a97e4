// The one shape every log format is read into: what the gateway's routing and key functions need to
// decide a request, and nothing else.

/**
 * One logged request.
 * @typedef {object} LogRecord
 * @property {number} timeMs When the edge received it: whole milliseconds since the Unix epoch.
 * @property {string} ip The client address as the edge saw it (cf-connecting-ip).
 * @property {string} method
 * @property {string} uri Path and query as requested (ClientRequestURI, or the request line's target).
 * @property {string} host The Host requested; "" when the log has none.
 * @property {number} status The response status; 0 when the log has none.
 * @property {Record<string, string> | null} headers Request headers the log kept, names in lower case.
 * @property {Record<string, unknown> | null} [cf] What Cloudflare knew of the request, as request.cf
 *   spells it (country, asn, colo, regionCode, botManagement), when the log has it.
 */

/** The HTTP methods a record may carry (anything else in a log line makes it unparseable). */
export const METHOD = /^[A-Z]{1,16}$/;
