// Key helpers for what Cloudflare knows of a request (request.cf: country, ASN, colo, bot score, JA3
// and JA4 fingerprints) and for a cookie or a query parameter, as WAF rate-limiting rules count by
// "characteristics". Each returns undefined when the request has nothing to say (no such field, no
// such cookie): alone, such requests share the one "unknown" key of the limiter (keys.js), and in
// firstOf(...) the next helper decides, so a missing characteristic never earns a budget of its own.
//
// A name sent twice (two cookies or two query parameters of the same name) is ambiguous: a server
// behind may read either. Such requests share one key, `<kind>-<name>:!ambiguous`, rather than being
// counted under whichever copy this code would have read.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { escapePart, requestOf, textOf } from "./keys.js";

/** @import { KeyHelper, KeyInput } from "./keys.js" */

/**
 * The request.cf fields cf() keys by: each a reader of the request's cf object.
 * @type {Readonly<Record<string, (cf: any) => unknown>>}
 */
export const CF_FIELDS = Object.freeze({
  country: (cf) => cf.country,
  asn: (cf) => cf.asn,
  colo: (cf) => cf.colo,
  region: (cf) => cf.regionCode,
  botScore: (cf) => cf.botManagement?.score,
  verifiedBot: (cf) => cf.botManagement?.verifiedBot,
  ja3: (cf) => cf.botManagement?.ja3Hash,
  ja4: (cf) => cf.botManagement?.ja4,
});

// Values longer than this are no fingerprint or code Cloudflare sets: cut, so no field can make a key long.
const MAX_VALUE_LENGTH = 128;
// Cookie and query names: an RFC 6265 token / a plain parameter name.
const NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/;

/**
 * cf keys a request by a field of request.cf that Cloudflare sets (clients cannot): "country", "asn",
 * "colo", "region", "botScore", "verifiedBot", "ja3" or "ja4". Requests without it (no Bot Management
 * on the zone, a local run) have nothing to say.
 * @param {keyof typeof CF_FIELDS} field
 * @returns {KeyHelper}
 */
export function cf(field) {
  const read = CF_FIELDS[/** @type {string} */ (field)];
  if (typeof read !== "function" || !Object.hasOwn(CF_FIELDS, field)) {
    throw new SluiceConfigError("cf(field)", `must be one of ${Object.keys(CF_FIELDS).join(", ")}; got ${describe(field)}`);
  }
  const label = `cf-${field}`;
  /** @param {KeyInput} input */
  return function cfKey(input) {
    const properties = /** @type {any} */ (requestOf(input)).cf;
    if (properties === null || typeof properties !== "object") return undefined;
    const value = textOf(/** @type {any} */ (read(properties)));
    return value === undefined ? undefined : `${label}:${escapePart(value.slice(0, MAX_VALUE_LENGTH))}`;
  };
}

/**
 * cookie keys a request by the value of its cookie `name` (as the Cookie header carries it, not
 * decoded: the server behind sees the same bytes). Absent gives nothing to say; sent twice, the key
 * `cookie-<name>:!ambiguous`.
 * @param {string} name
 * @returns {KeyHelper}
 */
export function cookie(name) {
  checkName(name, "cookie(name)");
  /** @param {KeyInput} input */
  return function cookieKey(input) {
    const header = requestOf(input).headers.get("cookie");
    if (header === null) return undefined;
    /** @type {string[]} */
    const values = [];
    for (const pair of header.split(";")) {
      const eq = pair.indexOf("=");
      if (eq > 0 && pair.slice(0, eq).trim() === name) values.push(pair.slice(eq + 1).trim());
    }
    return valueKey(`cookie-${name}`, values);
  };
}

/**
 * query keys a request by its query parameter `name`, decoded as URLSearchParams decodes it (so
 * `%61` and `a` are one key). Absent gives nothing to say; given twice, `query-<name>:!ambiguous`.
 * @param {string} name
 * @returns {KeyHelper}
 */
export function query(name) {
  checkName(name, "query(name)");
  /** @param {KeyInput} input */
  return function queryKey(input) {
    const { search } = new URL(requestOf(input).url);
    return search === "" ? undefined : valueKey(`query-${name}`, new URLSearchParams(search).getAll(name));
  };
}

/** @param {string} label @param {string[]} values */
function valueKey(label, values) {
  if (values.length > 1) return `${label}:!ambiguous`;
  const value = textOf(values[0]);
  return value === undefined ? undefined : `${label}:${escapePart(value)}`;
}

/** @param {unknown} name @param {string} field */
function checkName(name, field) {
  if (typeof name !== "string" || !NAME.test(name)) throw new SluiceConfigError(field, `must be a cookie or parameter name (letters, digits, -_.~ and the like, 1-64); got ${describe(name)}`);
}
