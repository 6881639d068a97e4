// CSV exports (a SIEM, a data warehouse, BigQuery): one request per line, the first line naming the
// columns (RFC 4180 quoting: "a,b" and "" inside quotes; a field may not span lines). Which column
// holds what is a column map, `field=column` pairs joined by commas:
//   time=ts,ip=client_ip,method=verb,uri=path,host=host,status=code,header:authorization=auth
// time, ip, method and uri are needed; header:<name> columns become request headers (for `user` and
// `apiKey:<name>` keys). Without a map, columns named after the fields (time or timestamp, ip or
// client_ip, method, uri or path, host, status) and Logpush's own names are found by themselves.
import { ReplayUsageError } from "../errors.js";
import { METHOD } from "./record.js";
import { timestampMs } from "./timestamp.js";

/** @import { LogRecord } from "./record.js" */

const FIELDS = Object.freeze(["time", "ip", "method", "uri", "host", "status"]);
const REQUIRED = Object.freeze(["time", "ip", "method", "uri"]);
/** @type {Readonly<Record<string, readonly string[]>>} */
const DEFAULT_NAMES = Object.freeze({
  time: ["time", "timestamp", "edgestarttimestamp"],
  ip: ["ip", "client_ip", "clientip"],
  method: ["method", "clientrequestmethod"],
  uri: ["uri", "path", "clientrequesturi"],
  host: ["host", "clientrequesthost"],
  status: ["status", "edgeresponsestatus"],
});
const HEADER_FIELD = /^header:([!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128})$/;

/**
 * splitCsvLine splits one CSV line into its fields; null when its quotes do not close.
 * @param {string} line
 * @returns {string[] | null}
 */
export function splitCsvLine(line) {
  if (line.indexOf('"') < 0) return line.split(",");
  /** @type {string[]} */
  const fields = [];
  let i = 0;
  for (;;) {
    if (line[i] === '"') {
      let value = "";
      let j = i + 1;
      for (;;) {
        const quote = line.indexOf('"', j);
        if (quote < 0) return null;
        value += line.slice(j, quote);
        if (line[quote + 1] === '"') {
          value += '"';
          j = quote + 2;
        } else {
          j = quote + 1;
          break;
        }
      }
      fields.push(value);
      if (j === line.length) return fields;
      if (line[j] !== ",") return null;
      i = j + 1;
    } else {
      const comma = line.indexOf(",", i);
      if (comma < 0) {
        fields.push(line.slice(i));
        return fields;
      }
      fields.push(line.slice(i, comma));
      i = comma + 1;
    }
  }
}

/**
 * parseColumnMap reads a `--columns` map into { field: column name }; throws ReplayUsageError naming
 * what is wrong.
 * @param {string} text
 * @returns {Record<string, string>}
 */
export function parseColumnMap(text) {
  /** @type {Record<string, string>} */
  const map = {};
  for (const pair of text.split(",")) {
    const at = pair.indexOf("=");
    const field = pair.slice(0, at).trim();
    const column = pair.slice(at + 1).trim();
    if (at < 1 || column === "") throw new ReplayUsageError("--columns", `"${pair}" is not field=column`);
    if (!FIELDS.includes(field) && !HEADER_FIELD.test(field)) {
      throw new ReplayUsageError("--columns", `unknown field "${field}" (expected ${FIELDS.join(", ")} or header:<name>)`);
    }
    map[field] = column;
  }
  return map;
}

/**
 * csvParser returns the parser of a CSV log whose first line is `headerLine`: parse(line) gives the
 * LogRecord of a data line, or null when it is unparseable. Throws ReplayUsageError when a needed
 * column is missing.
 * @param {string} headerLine
 * @param {Record<string, string>} [columnMap]
 * @returns {(line: string) => LogRecord | null}
 */
export function csvParser(headerLine, columnMap) {
  const names = splitCsvLine(headerLine);
  if (names === null) throw new ReplayUsageError("input", "the CSV header line has an unclosed quote");
  const lower = names.map((name) => name.trim().toLowerCase());
  /** @param {string} field @returns {number} */
  const indexOf = (field) => {
    if (columnMap?.[field] !== undefined) {
      const index = lower.indexOf(columnMap[field].toLowerCase());
      if (index < 0) throw new ReplayUsageError("--columns", `${field}=${columnMap[field]}: no such column (the header has ${names.join(", ")})`);
      return index;
    }
    return lower.findIndex((name) => (DEFAULT_NAMES[field] ?? []).includes(name));
  };
  const at = Object.fromEntries(FIELDS.map((field) => [field, indexOf(field)]));
  for (const field of REQUIRED) {
    if (at[field] < 0) throw new ReplayUsageError("--columns", `no column for ${field} (the header has ${names.join(", ")}); map it with --columns ${field}=<column>`);
  }
  const headerColumns = Object.keys(columnMap ?? {}).flatMap((field) => {
    const m = HEADER_FIELD.exec(field);
    return m === null ? [] : [[m[1].toLowerCase(), indexOf(field)]];
  });
  const width = names.length;
  return function parseCsvLine(line) {
    const fields = splitCsvLine(line);
    if (fields === null || fields.length !== width) return null;
    const timeMs = timestampMs(fields[at.time]);
    const ip = fields[at.ip];
    const method = fields[at.method];
    const uri = fields[at.uri];
    if (!(timeMs >= 0) || ip === "" || !METHOD.test(method) || uri[0] !== "/") return null;
    /** @type {Record<string, string> | null} */
    let headers = null;
    for (const [name, index] of headerColumns) {
      if (fields[index] === "") continue;
      headers ??= Object.create(null);
      /** @type {Record<string, string>} */ (headers)[name] = fields[index];
    }
    const status = at.status < 0 ? 0 : Number(fields[at.status]);
    return { timeMs, ip, method, uri, host: at.host < 0 ? "" : fields[at.host], status: Number.isInteger(status) ? status : 0, headers };
  };
}
