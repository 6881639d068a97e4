// Cloudflare Logpush, dataset http_requests, JSON lines (one object per line). Field names are
// Logpush's: EdgeStartTimestamp (unixnano, unix or RFC 3339, see timestamp.js), ClientIP,
// ClientRequestHost, ClientRequestMethod, ClientRequestURI (else ClientRequestPath), EdgeResponseStatus,
// and RequestHeaders, the custom request fields a job logs (an object of header name -> value); and
// what request.cf would have said, for cf: keys and country or ASN lists: ClientCountry (Logpush
// writes it in lower case, request.cf in upper), ClientASN, EdgeColoCode, ClientRegionCode, and
// BotScore, VerifiedBot, JA3Hash, JA4 as request.cf.botManagement.
import { METHOD } from "./record.js";
import { timestampMs } from "./timestamp.js";

/** @import { LogRecord } from "./record.js" */

/**
 * parseLogpushLine reads one line; null when it is not a Logpush request this tool can replay.
 * @param {string} line
 * @returns {LogRecord | null}
 */
export function parseLogpushLine(line) {
  let entry;
  try {
    entry = JSON.parse(line);
  } catch {
    return null;
  }
  if (entry === null || typeof entry !== "object") return null;
  const timeMs = timestampMs(entry.EdgeStartTimestamp);
  const ip = entry.ClientIP;
  const method = entry.ClientRequestMethod;
  const uri = typeof entry.ClientRequestURI === "string" ? entry.ClientRequestURI : entry.ClientRequestPath;
  if (!(timeMs >= 0) || typeof ip !== "string" || ip === "" || typeof method !== "string" || !METHOD.test(method) || typeof uri !== "string" || uri[0] !== "/") {
    return null;
  }
  const host = typeof entry.ClientRequestHost === "string" ? entry.ClientRequestHost : "";
  const status = Number.isInteger(entry.EdgeResponseStatus) ? entry.EdgeResponseStatus : 0;
  return { timeMs, ip, method, uri, host, status, headers: loggedHeaders(entry.RequestHeaders), cf: edgeFields(entry) };
}

// Logpush's custom request fields, names lower-cased; values that are not strings are dropped.
/** @param {unknown} raw @returns {Record<string, string> | null} */
function loggedHeaders(raw) {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return null;
  /** @type {Record<string, string>} */
  const headers = Object.create(null);
  let any = false;
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value !== "string") continue;
    headers[name.toLowerCase()] = value;
    any = true;
  }
  return any ? headers : null;
}

// request.cf as the Worker would have seen it, from the fields the job logged; null when none.
/** @param {any} entry @returns {Record<string, unknown> | null} */
function edgeFields(entry) {
  if (entry.ClientCountry === undefined && entry.ClientASN === undefined && entry.EdgeColoCode === undefined && entry.BotScore === undefined && entry.JA3Hash === undefined && entry.JA4 === undefined) return null;
  /** @type {Record<string, unknown>} */
  const cf = {};
  if (typeof entry.ClientCountry === "string" && entry.ClientCountry !== "") cf.country = entry.ClientCountry.toUpperCase();
  if (Number.isInteger(entry.ClientASN)) cf.asn = entry.ClientASN;
  if (typeof entry.EdgeColoCode === "string") cf.colo = entry.EdgeColoCode;
  if (typeof entry.ClientRegionCode === "string") cf.regionCode = entry.ClientRegionCode;
  /** @type {Record<string, unknown>} */
  const bot = {};
  if (typeof entry.BotScore === "number") bot.score = entry.BotScore;
  if (typeof entry.VerifiedBot === "boolean") bot.verifiedBot = entry.VerifiedBot;
  if (typeof entry.JA3Hash === "string") bot.ja3Hash = entry.JA3Hash;
  if (typeof entry.JA4 === "string") bot.ja4 = entry.JA4;
  if (Object.keys(bot).length > 0) cf.botManagement = bot;
  return cf;
}
