// The NCSA combined log format, as nginx (`log_format combined`, its default) and Apache
// (`LogFormat "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\""`) write it; the common
// format (no referer and agent) too:
//   203.0.113.7 - - [01/Dec/2026:10:00:00 +0000] "GET /api/items?id=3 HTTP/1.1" 200 512 "-" "curl/8.5"
// The log has no Host and no request headers: keys on `user` fall back to the client's address, as
// the gateway's do without a bearer token.
import { METHOD } from "./record.js";

/** @import { LogRecord } from "./record.js" */

const LINE = /^(\S+) \S+ \S+ \[(\d{2})\/([A-Z][a-z]{2})\/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})\] "([^"\\]*(?:\\.[^"\\]*)*)" (\d{3}) /;
const MONTHS = Object.freeze({ Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11 });
const ADDRESS = /^[0-9A-Fa-f.:]+$/;

/**
 * parseCombinedLine reads one line; null when it is not a request this tool can replay (a request
 * line nginx logged as "-" or as binary junk included).
 * @param {string} line
 * @returns {LogRecord | null}
 */
export function parseCombinedLine(line) {
  const m = LINE.exec(line);
  if (m === null) return null;
  const month = MONTHS[/** @type {keyof typeof MONTHS} */ (m[3])];
  if (month === undefined || !ADDRESS.test(m[1])) return null;
  const offsetMin = (m[8] === "-" ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10]));
  const timeMs = Date.UTC(Number(m[4]), month, Number(m[2]), Number(m[5]), Number(m[6]), Number(m[7])) - offsetMin * 60_000;
  const request = m[11].split(" ");
  if (request.length < 2 || request.length > 3 || !METHOD.test(request[0]) || request[1][0] !== "/") return null;
  if (!(timeMs >= 0)) return null;
  return { timeMs, ip: m[1], method: request[0], uri: request[1], host: "", status: Number(m[12]), headers: null };
}
