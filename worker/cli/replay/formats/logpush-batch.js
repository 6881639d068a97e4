// Logpush lines a batch at a time, read by the C++ core (sluice/logpush_scan.hpp through
// wasm-bindings/logpush-scan.js): each batch's bytes are copied into the module once and checked in one
// call, and a record is made of the few bytes its fields lie in, not of a JSON.parse'd object of the
// whole line (a user agent and a dozen fields nobody replays). A line the core does not answer for
// (UTF-8 text, escapes in a field the record takes, request.cf fields, colliding header names, deep
// nesting) is read by parseLogpushLine, as before. Either way a line gives the record
// parseLogpushLine(batch.text(i)) gives: test/js/replay-logpush-batch.test.js compares them over
// generated and hostile lines.
import replayWasm from "../../../../wasm-bindings/replay-module-node.js";
import { HEADER_WORDS, LogpushLine, LogpushScan, SPAN_WORDS, Span, TimeForm } from "../../../../wasm-bindings/logpush-scan.js";
import { parseLogpushLine } from "./logpush.js";
import { timestampMs } from "./timestamp.js";

/** @import { LineBatch } from "../input.js" */
/** @import { LogRecord } from "./record.js" */

export { LogpushLine };

export class LogpushBatchReader {
  /** @type {LogpushScan} */
  #scan;
  /** @type {LineBatch | null} */
  #batch = null;

  constructor() {
    // An instance of the module per reader: a replay awaits between lines (a key to hash), and another
    // replay in the same process must not overwrite this one's batch meanwhile.
    this.#scan = new LogpushScan(replayWasm);
  }

  /**
   * read scans every line of `batch`; false when the module cannot hold it (then read its lines as
   * text). The verdicts are valid until the next read.
   * @param {LineBatch} batch
   */
  read(batch) {
    this.#batch = null;
    if (batch.count === 0) return false;
    if (!this.#scan.scan(batch.bytes, batch.ends[batch.count - 1], batch.starts, batch.ends, batch.count)) return false;
    this.#batch = batch;
    return true;
  }

  /** kind is line i's verdict, a LogpushLine. @param {number} i @returns {number} */
  kind(i) {
    return this.#scan.i32[this.#scan.spanBase + i * SPAN_WORDS + Span.KIND];
  }

  /**
   * recordAt is line i's record, or null when it is none (blank lines too): parseLogpushLine's answer.
   * @param {number} i
   * @returns {LogRecord | null}
   */
  recordAt(i) {
    const kind = this.kind(i);
    if (kind === LogpushLine.RECORD) return this.record(i);
    if (kind === LogpushLine.FALLBACK) return parseLogpushLine(/** @type {LineBatch} */ (this.#batch).text(i));
    return null;
  }

  /**
   * record is the record of line i, whose verdict is RECORD (null when its timestamp is none).
   * @param {number} i
   * @returns {LogRecord | null}
   */
  record(i) {
    const bytes = /** @type {LineBatch} */ (this.#batch).bytes;
    const { i32, f64, spanBase, headerBase, strings } = this.#scan;
    const at = spanBase + i * SPAN_WORDS;
    const form = i32[at + Span.TIME_FORM];
    let timeMs;
    if (form === TimeForm.NUMBER) timeMs = timestampMs(f64[(at >>> 1) + Span.TIME_VALUE]);
    else {
      const text = bytes.latin1Slice(i32[at + Span.TIME], i32[at + Span.TIME + 1]);
      timeMs = timestampMs(form === TimeForm.STRING ? text : Number(text));
    }
    if (!(timeMs >= 0)) return null;
    let status = f64[(at >>> 1) + Span.STATUS_VALUE];
    if (i32[at + Span.STATUS_TEXT] >= 0) {
      const n = Number(bytes.latin1Slice(i32[at + Span.STATUS_TEXT], i32[at + Span.STATUS_TEXT + 1]));
      status = Number.isInteger(n) ? n : 0;
    }
    /** @type {Record<string, string> | null} */
    let headers = null;
    const headerCount = i32[at + Span.HEADER_COUNT];
    if (headerCount > 0) {
      headers = Object.create(null);
      for (let k = 0, h = headerBase + i32[at + Span.HEADER_FIRST] * HEADER_WORDS; k < headerCount; k++, h += HEADER_WORDS) {
        const name = i32[h + 4] > 0 ? strings[i32[h + 4] - 1] : bytes.latin1Slice(i32[h], i32[h + 1]);
        /** @type {Record<string, string>} */ (headers)[name.toLowerCase()] = i32[h + 5] > 0 ? strings[i32[h + 5] - 1] : bytes.latin1Slice(i32[h + 2], i32[h + 3]);
      }
    }
    const ipId = i32[at + Span.IP_ID];
    const methodId = i32[at + Span.METHOD_ID];
    const uriId = i32[at + Span.URI_ID];
    const hostId = i32[at + Span.HOST_ID];
    return {
      timeMs,
      ip: ipId > 0 ? strings[ipId - 1] : bytes.latin1Slice(i32[at + Span.IP], i32[at + Span.IP + 1]),
      method: methodId > 0 ? strings[methodId - 1] : bytes.latin1Slice(i32[at + Span.METHOD], i32[at + Span.METHOD + 1]),
      uri: uriId > 0 ? strings[uriId - 1] : bytes.latin1Slice(i32[at + Span.URI], i32[at + Span.URI + 1]),
      host: hostId > 0 ? strings[hostId - 1] : i32[at + Span.HOST] < 0 ? "" : bytes.latin1Slice(i32[at + Span.HOST], i32[at + Span.HOST + 1]),
      status,
      headers,
      cf: null,
    };
  }
}
