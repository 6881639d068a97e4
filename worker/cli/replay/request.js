// A logged request dressed as the Request the Worker's key functions read: they call
// request.headers.get(name) and nothing else (keys.js), so this carries the log's fields under the
// names the edge gives them (cf-connecting-ip is ClientIP, host is ClientRequestHost) and the logged
// request headers, without building a real Request per line.

/** @import { LogRecord } from "./formats/record.js" */

class LogHeaders {
  /** @param {LogRequest} request */
  constructor(request) {
    this.request = request;
  }

  /** @param {string} name @returns {string | null} */
  get(name) {
    const record = this.request.record;
    const lower = name.toLowerCase();
    if (lower === "cf-connecting-ip") return record.ip;
    if (lower === "host") return record.host === "" ? null : record.host;
    return record.headers?.[lower] ?? null;
  }

  /** @param {string} name */
  has(name) {
    return this.get(name) !== null;
  }
}

/** LogRequest is the Request-shaped view of one LogRecord. */
export class LogRequest {
  /** @param {LogRecord} record */
  constructor(record) {
    /** The record this request stands for; replaceable, so one object can serve a whole replay. */
    this.record = record;
    this.headers = new LogHeaders(this);
  }

  get method() {
    return this.record.method;
  }

  /** request.cf as far as the log tells it (Logpush's edge fields), else undefined as off Cloudflare. */
  get cf() {
    return this.record.cf ?? undefined;
  }

  /** The URL the edge received (a placeholder host when the log has none). */
  get url() {
    return `https://${this.record.host === "" ? "replay.invalid" : this.record.host}${this.record.uri}`;
  }
}
