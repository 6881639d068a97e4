// Allow and deny lists: client addresses (single addresses and CIDR blocks, IPv4 and IPv6), countries
// and autonomous systems, as a WAF's IP access rules have them. A request matches by what it cannot
// forge: the address Cloudflare saw (cf-connecting-ip; never x-forwarded-for), and request.cf's country
// and ASN. Addresses are compared in one canonical form (http/addresses.js), so no spelling of an
// address (leading zeros, "::" placement, upper-case hex, an IPv4-mapped IPv6 form, brackets, a port)
// slips past a block.
//
// The allow list wins: it is for your own monitors and partners, whose requests skip the rate limits;
// the deny list refuses everyone else it names. A request that matches neither goes on as usual.
import { SluiceConfigError, describe } from "../../engine/errors.js";
import { cidrMatcher } from "../../http/addresses.js";
import { requestOf } from "../../http/keys.js";

/** @import { KeyInput } from "../../http/keys.js" */
/** A list, compiled: its CIDR blocks' matcher (null: none), country codes and AS numbers. @typedef {{ ips: { matches: (text: string | null) => boolean } | null, countries: Set<string>, asns: Set<number> }} CompiledList */

/**
 * What one list names.
 * @typedef {object} ListEntries
 * @property {readonly string[]} [ips] Addresses and CIDR blocks: "192.0.2.1", "10.0.0.0/8", "2001:db8::/32".
 * @property {readonly string[]} [countries] ISO 3166-1 alpha-2 codes as Cloudflare sets them ("NZ"; "T1" is Tor, "XX" unknown).
 * @property {readonly number[]} [asns] Autonomous system numbers.
 */
/**
 * @typedef {object} AccessListOptions
 * @property {ListEntries} [allow] Requests that skip the rate limits.
 * @property {ListEntries} [deny] Requests refused (403).
 */
/**
 * Which list a request is on, and by what.
 * @typedef {{ list: "allow" | "deny", by: "ip" | "country" | "asn" } | { list: null, by: null }} ListMatch
 */

/** The most entries one list may hold (each address list is scanned per request). */
export const MAX_LIST_ENTRIES = 5000;
const LIST_FIELDS = ["ips", "countries", "asns"];
const COUNTRY = /^[A-Z][A-Z0-9]$/;
/** @type {ListMatch} */
const NO_MATCH = Object.freeze({ list: null, by: null });

/**
 * createAccessList validates `options` (a SluiceConfigError names the field: "allow.ips[2]", ...) and
 * returns { match(input) }: which list the request is on. `input` is a Request or a Hono context.
 * @param {AccessListOptions} options
 */
export function createAccessList(options) {
  if (options === null || typeof options !== "object") throw new SluiceConfigError("lists", `must be an object { allow, deny }; got ${describe(options)}`);
  for (const field of Object.keys(options)) if (field !== "allow" && field !== "deny") throw new SluiceConfigError(field, "is not an option (known: allow, deny)");
  const allow = compileList(options.allow, "allow");
  const deny = compileList(options.deny, "deny");

  /** @param {KeyInput} input @returns {ListMatch} */
  function match(input) {
    const request = requestOf(input);
    const address = request.headers.get("cf-connecting-ip");
    const properties = /** @type {any} */ (request).cf;
    const country = typeof properties?.country === "string" ? properties.country.toUpperCase() : null;
    const asn = typeof properties?.asn === "number" ? properties.asn : null;
    return matchIn(allow, "allow", address, country, asn) ?? matchIn(deny, "deny", address, country, asn) ?? NO_MATCH;
  }

  return { match };
}

/**
 * @param {{ ips: { matches: (text: string | null) => boolean } | null, countries: Set<string>, asns: Set<number> } | null} list
 * @param {"allow" | "deny"} name @param {string | null} address @param {string | null} country @param {number | null} asn
 * @returns {ListMatch | null}
 */
function matchIn(list, name, address, country, asn) {
  if (list === null) return null;
  if (list.ips !== null && list.ips.matches(address)) return { list: name, by: "ip" };
  if (country !== null && list.countries.has(country)) return { list: name, by: "country" };
  if (asn !== null && list.asns.has(asn)) return { list: name, by: "asn" };
  return null;
}

/** @param {unknown} raw @param {string} path @returns {CompiledList | null} */
function compileList(raw, path) {
  if (raw === undefined) return null;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new SluiceConfigError(path, `must be an object { ips, countries, asns }; got ${describe(raw)}`);
  for (const field of Object.keys(raw)) if (!LIST_FIELDS.includes(field)) throw new SluiceConfigError(`${path}.${field}`, `is not an option (known: ${LIST_FIELDS.join(", ")})`);
  const { ips = [], countries = [], asns = [] } = /** @type {{ ips?: unknown[], countries?: unknown[], asns?: number[] }} */ (raw); // each entry is checked below
  for (const [field, value] of [["ips", ips], ["countries", countries], ["asns", asns]]) {
    if (!Array.isArray(value)) throw new SluiceConfigError(`${path}.${field}`, `must be an array; got ${describe(value)}`);
    if (value.length > MAX_LIST_ENTRIES) throw new SluiceConfigError(`${path}.${field}`, `holds ${value.length} entries; at most ${MAX_LIST_ENTRIES}`);
  }
  /** @type {{ matches: (text: string | null) => boolean } | null} */
  let matcher = null;
  if (ips.length > 0) {
    for (let i = 0; i < ips.length; i++) {
      const one = cidrMatcher([ips[i]]);
      if (one.problem !== undefined) throw new SluiceConfigError(`${path}.ips[${i}]`, one.problem);
    }
    matcher = /** @type {{ matches: (text: string | null) => boolean }} */ (cidrMatcher(ips));
  }
  /** @type {Set<string>} */
  const codes = new Set();
  countries.forEach((code, i) => {
    const upper = typeof code === "string" ? code.toUpperCase() : code;
    if (typeof upper !== "string" || !COUNTRY.test(upper)) throw new SluiceConfigError(`${path}.countries[${i}]`, `must be a two-letter country code such as "NZ"; got ${describe(code)}`);
    codes.add(upper);
  });
  /** @type {Set<number>} */
  const numbers = new Set();
  asns.forEach((asn, i) => {
    if (!Number.isInteger(asn) || asn < 0 || asn > 4_294_967_295) throw new SluiceConfigError(`${path}.asns[${i}]`, `must be an AS number (a whole number up to 4294967295); got ${describe(asn)}`);
    numbers.add(asn);
  });
  return { ips: matcher, countries: codes, asns: numbers };
}
