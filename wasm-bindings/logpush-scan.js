// The JS side of sluice-replay.wasm, the Logpush reader (sluice_abi.h: sluice_logpush_*; cpp/include/sluice/
// logpush_scan.hpp says what each verdict means): an instance of the module of its own, used by
// `sluice replay` (worker/cli/replay/formats/logpush-batch.js). A batch is copied in once and read in
// one call; the verdicts and spans are then read from the module's memory, valid until the next scan.
import { ABI_VERSION } from "./abi-version.js";
import { standaloneInstance } from "./standalone-instance.js";

/** The verdicts of sluice::LogpushLine. */
export const LogpushLine = Object.freeze({ BLANK: 0, NOT_OBJECT: 1, NOT_JSON: 2, NO_RECORD: 3, FALLBACK: 4, RECORD: 5 });
/** How EdgeStartTimestamp is given (sluice::kLogpush*): the double, a string, or a number's text. */
export const TimeForm = Object.freeze({ NUMBER: 0, STRING: 1, NUMBER_TEXT: 2 });

// sluice::LogpushSpans: 20 i32 then 2 f64 (96 bytes); sluice::LogpushHeader: 6 i32.
export const SPAN_WORDS = 24;
export const HEADER_WORDS = 6;
export const Span = Object.freeze({
  KIND: 0,
  IP: 1,
  HOST: 3,
  METHOD: 5,
  URI: 7,
  TIME: 9,
  TIME_FORM: 11,
  STATUS_TEXT: 12,
  HEADER_FIRST: 14,
  HEADER_COUNT: 15,
  IP_ID: 16,
  HOST_ID: 17,
  METHOD_ID: 18,
  URI_ID: 19,
  TIME_VALUE: 10, // in f64 words
  STATUS_VALUE: 11,
});

/** The text of ASCII bytes [start, end) of `bytes` (a Buffer's own latin1Slice when it has one). @param {Uint8Array} bytes @param {number} start @param {number} end */
function latin1(bytes, start, end) {
  const buffer = /** @type {any} */ (bytes);
  return typeof buffer.latin1Slice === "function" ? buffer.latin1Slice(start, end) : String.fromCharCode(...bytes.subarray(start, end));
}

export class LogpushScan {
  /** @type {any} */
  #exports;
  /** @type {WebAssembly.Memory} */
  #memory;
  #bytesCapacity = 0;
  #linesCapacity = 0;
  #areas = { table: 0, bytes: 0, starts: 0, ends: 0, spans: 0, headers: 0, fresh: 0 };
  /** The verdicts and spans of the last scan (SPAN_WORDS words a line from `spanBase`), and the headers. */
  i32 = new Int32Array(0);
  f64 = new Float64Array(0);
  spanBase = 0;
  headerBase = 0;
  /**
   * The module's string table (sluice::LogpushStrings) as strings: id - 1 is the slot. Brought up to
   * date by every scan, so a span's id > 0 names strings[id - 1].
   * @type {string[]}
   */
  strings = new Array(1 << 12).fill("");

  /** @param {WebAssembly.Module} module */
  constructor(module) {
    /** @type {LogpushScan} */
    const self = this;
    const instance = standaloneInstance(module, "sluice-replay.wasm", () => self.#refreshViews());
    this.#exports = instance.exports;
    // Before anything else is called: a module of another build would be read with the wrong layouts.
    const version = typeof this.#exports.sluice_logpush_abi_version === "function" ? this.#exports.sluice_logpush_abi_version() : "none";
    if (version !== ABI_VERSION) throw new RangeError(`sluice-replay.wasm speaks ABI ${version}, this loader ${ABI_VERSION}`);
    this.#memory = /** @type {WebAssembly.Memory} */ (instance.exports.memory);
    this.#exports._initialize?.();
    this.#refreshViews();
  }

  #refreshViews() {
    this.i32 = new Int32Array(this.#memory.buffer);
    this.f64 = new Float64Array(this.#memory.buffer);
  }

  /**
   * scan reads lines i < count, bytes[starts[i], ends[i]) (offsets into `bytes`, whose first `length`
   * bytes are copied in); false when the module's memory cannot hold the batch (read it otherwise).
   * @param {Uint8Array} bytes @param {number} length @param {Int32Array} starts @param {Int32Array} ends @param {number} count
   */
  scan(bytes, length, starts, ends, count) {
    if (length > this.#bytesCapacity || count > this.#linesCapacity) {
      // Room to spare, so that a slightly larger batch does not move everything again.
      const wantBytes = Math.max(length, this.#bytesCapacity * 1.5) | 0;
      const wantLines = Math.max(count, this.#linesCapacity * 1.5, 1024) | 0;
      if (this.#exports.sluice_logpush_reserve(wantBytes, wantLines) !== 1) {
        this.#bytesCapacity = 0;
        this.#linesCapacity = 0;
        return false;
      }
      this.#refreshViews();
      const at = this.#exports.sluice_logpush_areas();
      const [b, s, e, sp, h, f] = this.i32.subarray(at >>> 2, (at >>> 2) + 6);
      this.#areas = { table: at, bytes: b, starts: s, ends: e, spans: sp, headers: h, fresh: f };
      this.#bytesCapacity = wantBytes;
      this.#linesCapacity = wantLines;
    }
    const areas = this.#areas;
    new Uint8Array(this.#memory.buffer, areas.bytes, length).set(bytes.subarray(0, length));
    this.i32.set(starts.subarray(0, count), areas.starts >>> 2);
    this.i32.set(ends.subarray(0, count), areas.ends >>> 2);
    if (this.#exports.sluice_logpush_scan(count) < 0) throw new RangeError("sluice.wasm: sluice_logpush_scan refused a batch");
    this.spanBase = areas.spans >>> 2;
    this.headerBase = areas.headers >>> 2;
    // The strings this batch put into the table: made once here, whichever lines are read.
    const i32 = this.i32;
    const fresh = i32[(areas.table >>> 2) + 6];
    for (let k = 0, f = areas.fresh >>> 2; k < fresh; k++, f += 3) this.strings[i32[f]] = latin1(bytes, i32[f + 1], i32[f + 2]);
    return true;
  }
}
