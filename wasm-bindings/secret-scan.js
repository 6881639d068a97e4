// The JS side of sluice.wasm's secret scan (sluice_abi.h: sluice_scan_*; cpp/include/sluice/
// secret_scan.hpp says what a candidate is): an instance of the module of its own, so that scanning
// never touches a limiter's I/O area. One per isolate, made on first use; each set of secrets gets its
// tables once (ScanTables), and a scan copies the text in and reads the positions out, nothing else.
import { ABI_VERSION } from "./abi-version.js";
import { standaloneInstance } from "./standalone-instance.js";

// Offsets of sluice::SecretScanTables (static_assert'ed there).
const RAW_START = 0;
const FRAGMENT_FIRST = 256;
const ESCAPE_VALUE_START = 512;
const HAS_FRAGMENTS = 768;
const NAMED_FIRST = 784;
const PAIR_BITS = 9216;
const PAIR_INDEX = 17408;
const THIRD_SETS = 148736 + 32768;

/**
 * The tables of one set of secrets, as redact.js builds them (see secret_scan.hpp for each).
 * `pairIndex` (65536 entries) gives each pair 0 or 1 + its index in `thirdSets` (8 words per pair).
 * `runs`: every secret and base64 needle, with the fewest of its bytes an occurrence as it is has, and
 * whether escapes may spell its characters (a secret's, not a needle's): the sparse scan's grams.
 * `namedFirst` (8 words): bit c set when a named character reference beginning with the letter c
 * spells a character of a secret.
 * @typedef {{ bytes: Uint8Array, minBytes: number, escapable: boolean }} ScanRun
 * @typedef {{ rawStart: Uint8Array, fragmentFirst: Uint8Array, escapeValueStart: Uint8Array, hasFragments: boolean, pairIndex: Uint16Array, thirdSets: Uint32Array, runs: ScanRun[], namedFirst: Uint32Array }} ScanTableInput
 */

export class SecretScan {
  /** @type {any} */
  #exports;
  /** @type {WebAssembly.Memory} */
  #memory;
  /** @type {Uint8Array} */
  #bytes = new Uint8Array(0);
  /** @type {Uint32Array} */
  #words = new Uint32Array(0);
  #text = 0;
  #capacity = 0;
  // Tables no longer reachable from JavaScript are given back to the module's allocator.
  #release = typeof FinalizationRegistry === "function" ? new FinalizationRegistry((address) => this.#exports.sluice_scan_tables_free(address)) : null;

  /** @param {WebAssembly.Module} module */
  constructor(module) {
    /** @type {SecretScan} */
    const self = this;
    const instance = standaloneInstance(module, "sluice.wasm", () => self.#refreshViews());
    this.#exports = instance.exports;
    this.#memory = /** @type {WebAssembly.Memory} */ (instance.exports.memory);
    // Before anything else: another version's tables have another layout (core-abi-version.test.js).
    const version = this.#exports.sluice_abi_version();
    if (version !== ABI_VERSION) throw new RangeError(`sluice.wasm speaks ABI ${version}, this loader ${ABI_VERSION}`);
    this.#exports._initialize?.();
    this.#refreshViews();
  }

  #refreshViews() {
    this.#bytes = new Uint8Array(this.#memory.buffer);
    this.#words = new Uint32Array(this.#memory.buffer);
  }

  // Makes the scan area hold `length` bytes.
  /** @param {number} length */
  #reserve(length) {
    if (length <= this.#capacity) return;
    this.#text = this.#exports.sluice_scan_reserve(length);
    if (this.#text === 0) throw new RangeError("sluice.wasm: no memory left to scan a body");
    this.#capacity = length;
    this.#refreshViews();
  }

  /**
   * The module's copy of `input`, for candidates(). Throws when the module's memory runs out.
   * @param {ScanTableInput} input
   * @returns {{ address: number }}
   */
  tables(input) {
    const address = this.#exports.sluice_scan_tables_new(input.thirdSets.length / 8);
    if (address === 0) throw new RangeError("sluice.wasm: no memory left for a secret scan's tables");
    this.#refreshViews();
    this.#bytes.set(input.rawStart, address + RAW_START);
    this.#bytes.set(input.fragmentFirst, address + FRAGMENT_FIRST);
    this.#bytes.set(input.escapeValueStart, address + ESCAPE_VALUE_START);
    this.#words[(address + HAS_FRAGMENTS) >>> 2] = input.hasFragments ? 1 : 0;
    this.#words.set(input.namedFirst, (address + NAMED_FIRST) >>> 2);
    const pairBits = new Uint32Array(2048);
    input.pairIndex.forEach((index, pair) => {
      if (index !== 0) pairBits[pair >>> 5] |= 1 << (pair & 31);
    });
    this.#words.set(pairBits, (address + PAIR_BITS) >>> 2);
    new Uint16Array(this.#memory.buffer, address + PAIR_INDEX, 65536).set(input.pairIndex);
    this.#words.set(input.thirdSets, (address + THIRD_SETS) >>> 2);
    for (const run of input.runs) {
      this.#reserve(run.bytes.length);
      this.#bytes.set(run.bytes, this.#text);
      const status = this.#exports.sluice_scan_tables_add_run(address, run.bytes.length, run.minBytes, run.escapable ? 1 : 0);
      if (status < 0) throw new RangeError(`sluice.wasm: sluice_scan_tables_add_run failed (${-status})`);
    }
    this.#exports.sluice_scan_tables_ready(address);
    const handle = { address };
    this.#release?.register(handle, address);
    return handle;
  }

  /**
   * The positions of `text` where an occurrence may begin, in increasing order: a view of the
   * module's memory, valid until the next call.
   * @param {{ address: number }} tables @param {Uint8Array} text
   * @returns {Uint32Array}
   */
  candidates(tables, text) {
    this.#reserve(text.length);
    this.#bytes.set(text, this.#text);
    const count = this.#exports.sluice_scan(tables.address, text.length);
    if (count < 0) throw new RangeError(`sluice.wasm: sluice_scan failed (${-count})`);
    const positions = this.#exports.sluice_scan_positions();
    return this.#words.subarray(positions >>> 2, (positions >>> 2) + count);
  }
}
