// The part of the sluice.wasm boundary every limiter needs: instantiates the module (no Emscripten
// glue) and decides checks through its C ABI (sluice_abi.h). The rest of the ABI (concurrency, state
// bytes, table statistics, lending) is in sluice.js, as functions of a CoreBase and as the methods of
// the public SluiceCore: an app that only limits rates (the isolate's memory store) bundles this file
// alone. Keys are copied into the module's I/O area; nothing is allocated in linear memory per call.
import { ABI_VERSION } from "./abi-version.js";

export { ABI_VERSION };
/** The most UTF-8 bytes a key may have. */
export const MAX_KEY_BYTES = /** @type {const} */ (512);
/** The most checks one checkAll takes. */
export const MAX_CHECKS_PER_CALL = /** @type {const} */ (16);

/**
 * @typedef {"fixed-window" | "sliding-log" | "sliding-counter" | "token-bucket" | "leaky-bucket" | "gcra"} AlgorithmName
 */

/**
 * Algorithm names, indexed by their ABI value (mirrors sluice::Algorithm).
 * @type {readonly AlgorithmName[]}
 */
export const ALGORITHMS = Object.freeze([
  "fixed-window",
  "sliding-log",
  "sliding-counter",
  "token-bucket",
  "leaky-bucket",
  "gcra",
]);

/** Status codes (mirrors sluice::Status). */
export const Status = Object.freeze({
  OK: 0,
  KEY_TOO_LONG: 1,
  INVALID_RULE: 2,
  INVALID_COST: 3,
  UNKNOWN_RULE: 4,
  TOO_MANY_CHECKS: 5,
  OUT_OF_MEMORY: 6,
  INVALID_STATE: 7,
  NOT_FOUND: 8,
  BUFFER_TOO_SMALL: 9,
  INVALID_ARGUMENT: 10,
});
/** @typedef {(typeof Status)[keyof typeof Status]} StatusCode */

// The concurrency rule is not a rate, so it is not among ALGORITHMS (which rate limits choose from):
// addRule takes it by this name, as ABI value 6 (sluice::Algorithm::kConcurrency).
const CONCURRENCY = "concurrency";
const CONCURRENCY_ALGORITHM = 6;
/** @type {Readonly<Record<number, string>>} */
const STATUS_NAMES = Object.freeze(Object.fromEntries(Object.entries(Status).map(([k, v]) => [v, k])));

/**
 * A rule as the core takes it.
 * @typedef {object} RuleSpec
 * @property {AlgorithmName} algorithm
 * @property {number} limit Window quota, or sustained tokens per window for the buckets and GCRA.
 * @property {number} windowMs
 * @property {number} [burst] Bucket capacity for token-bucket, leaky-bucket and gcra; 0 or absent means `limit`.
 * @property {number} keyCapacity How many keys the rule's table holds before it evicts the least used.
 * @property {boolean} [countDenied] sliding-counter only: denied requests count too (Cloudflare's semantics). Default false.
 * @property {number} [blockMs] 0 (the default) throttles: only the excess is denied. Otherwise a key that exceeds the rule is denied every request for blockMs, or until its quota would be whole again if that is later, and then starts at its full quota (cpp/include/sluice/block.hpp). Not for concurrency rules or with countDenied.
 */

/**
 * One rule's answer for one key. Times are milliseconds from `nowMs`.
 * @typedef {object} Decision
 * @property {boolean} allowed
 * @property {number} limit
 * @property {number} remaining
 * @property {number} resetMs Until the key is back to its full quota (or, for the fixed window, the window turns).
 * @property {number} retryAfterMs Until this same request would be admitted; 0 when admitted; Infinity when never.
 */

/**
 * One check of checkAll.
 * @typedef {object} CheckSpec
 * @property {number} rule
 * @property {string | Uint8Array} key
 * @property {number} [cost] A whole number >= 1; default 1.
 */

/**
 * checkAll's answer: the deciding check's decision, and every check's own.
 * @typedef {Decision & CoreOutcomeFields} Outcome
 */
/**
 * @typedef {object} CoreOutcomeFields
 * @property {number} decidingCheck Index of the check whose decision this is (the denying one, or the one with least remaining).
 * @property {Decision[]} checks
 */

/**
 * A rule's key table.
 * @typedef {object} TableStats
 * @property {number} keys
 * @property {number} slots
 * @property {number} memoryBytes
 * @property {number} evictions
 * @property {number} evictionsRestricting Evictions of keys that still owed quota (folded into the eviction summary): above 0, the table is too small.
 * @property {number} summaryStarts Charged requests of keys not in the table that started from the eviction summary.
 * @property {number} summaryBytes
 */

/**
 * @typedef {object} CoreOptions
 * @property {Uint32Array} [seed] The key table's hash secret; random when absent.
 */

// The I/O area's layout (sluice_abi.h).
const KEY_STRIDE = 512;
const CHECKS_OFFSET = 8192;
const OUTCOME_OFFSET = 8448;
const DECISIONS_OFFSET = 8496;
// Check i's decision, in f64 words from the outcome's start; a single check's is the outcome's own.
const DECISION_AT = (DECISIONS_OFFSET - OUTCOME_OFFSET) / 8;

// sluice_add_rule options, OR'd into the algorithm (sluice_abi.h).
const RULE_COUNT_DENIED = 0x100;

// sluice_check flags (sluice_abi.h).
const CHARGE = 1;
const KEY0_UNCHANGED = 2;

// The core's field names, as the host's options spell them.
/** @type {Readonly<Record<string, string>>} */
const FIELD_NAMES = Object.freeze({ window_ms: "windowMs", key_capacity: "keyCapacity", count_denied: "countDenied", block_ms: "blockMs" });

/** SluiceError is a call the core refused: a programming or configuration error, never a limit. */
export class SluiceError extends Error {
  /**
   * @param {StatusCode} status
   * @param {string} message
   * @param {string} [field]
   */
  constructor(status, message, field) {
    super(message);
    /** @type {"SluiceError"} */
    this.name = "SluiceError";
    /** @readonly */
    this.status = status;
    /** @readonly */
    this.statusName = STATUS_NAMES[status] ?? "UNKNOWN";
    /**
     * The option at fault, when there is one ("limit", "windowMs", "burst", "algorithm", "keyCapacity", "rule", "key", "cost").
     * @type {string | undefined}
     */
    this.field;
    if (field !== undefined) this.field = field;
  }
}

const utf8 = new TextEncoder();

// A cost the ABI's u32 carries unchanged (it would quietly wrap 2^32 + 1 to 1).
/** @param {unknown} cost @returns {asserts cost is number} */
export function checkCost(cost) {
  if (typeof cost !== "number" || !Number.isInteger(cost) || cost < 1 || cost > 0x80000000) {
    throw new SluiceError(Status.INVALID_COST, `cost must be a whole number from 1 to 2^31; got ${String(cost)}`, "cost");
  }
}

// A time the ABI's f64 carries as it is: the module checks its range, but a string would be quietly
// converted on the way in.
/** @param {unknown} nowMs */
export function timeError(nowMs) {
  return new SluiceError(Status.INVALID_ARGUMENT, `nowMs must be a whole number of milliseconds from 0 to 2^42; got ${typeof nowMs === "string" ? JSON.stringify(nowMs) : String(nowMs)}`, "nowMs");
}

/**
 * The internals the operations of sluice.js reach (one module's helpers, no public API): set once,
 * by CoreBase's static block, the only code that can read its private fields.
 * @type {CoreInternals}
 */
export let coreInternals;

/**
 * @typedef {object} CoreInternals
 * @property {<T extends CoreBase>(Class: new (instance: WebAssembly.Instance, options?: CoreOptions) => T, module: WebAssembly.Module, options: CoreOptions) => T} instantiateAs
 *   Instantiates the module as a subclass of CoreBase.
 * @property {(core: CoreBase) => any} exports The module's exports.
 * @property {(core: CoreBase, rule: unknown) => number} ruleId A rule id handed out by addRule, or a SluiceError.
 * @property {(core: CoreBase, key: unknown) => number} writeKey Copies the key to slot 0; returns its length.
 * @property {(core: CoreBase) => void} forgetHash The module no longer holds a hash of slot 0's bytes.
 * @property {(core: CoreBase, result: number, what: string) => number} check The result, or the SluiceError of its status.
 * @property {(core: CoreBase, result: number, what: string, nowMs: number) => void} checkDecided check, naming the time when it was refused.
 * @property {(core: CoreBase) => Decision} decision The decision in the outcome area.
 * @property {(core: CoreBase) => Uint8Array} bytes The module's memory, as bytes.
 * @property {(core: CoreBase) => Float64Array} f64 The outcome area, as f64 words.
 */

/**
 * CoreBase is one limiter: one wasm instance, its rules and its key tables; it decides checks.
 * SluiceCore (sluice.js) is CoreBase with the rest of the ABI as methods.
 */
export class CoreBase {
  static {
    coreInternals = Object.freeze({
      instantiateAs: (Class, module, options) => CoreBase.#instantiateAs(Class, module, options),
      exports: (core) => core.#exports,
      ruleId: (core, rule) => core.#ruleId(rule),
      writeKey: (core, key) => core.#writeKey(0, key),
      forgetHash: (core) => {
        core.#slot0Hashed = false;
      },
      check: (core, result, what) => core.#check(result, what),
      checkDecided: (core, result, what, nowMs) => core.#checkDecided(result, what, nowMs),
      decision: (core) => core.#readDecisionAt(0),
      bytes: (core) => core.#bytes,
      f64: (core) => core.#f64,
    });
  }

  /**
   * @param {WebAssembly.Module} module
   * @param {CoreOptions} [options]
   * @returns {CoreBase}
   */
  static instantiate(module, options = {}) {
    return CoreBase.#instantiateAs(CoreBase, module, options);
  }

  // Instantiates `module` as `Class` (CoreBase, or SluiceCore for SluiceCore.instantiate), whose
  // instances the growth callback reaches.
  /**
   * @template {CoreBase} T
   * @param {new (instance: WebAssembly.Instance, options?: CoreOptions) => T} Class
   * @param {WebAssembly.Module} module
   * @param {CoreOptions} options
   * @returns {T}
   */
  static #instantiateAs(Class, module, options) {
    /** @type {CoreBase | null} */
    let core = null;
    const imports = {
      env: {
        // Growth detaches the old ArrayBuffer: rebuild the views before the next read.
        emscripten_notify_memory_growth() {
          if (core !== null) /** @type {CoreBase} */ (core).#refreshViews();
        },
      },
      wasi_snapshot_preview1: {
        /** @param {number} code */
        proc_exit(code) {
          throw new SluiceError(Status.INVALID_ARGUMENT, `sluice.wasm exited with code ${code}`);
        },
      },
    };
    const instance = new WebAssembly.Instance(module, imports);
    const created = new Class(instance, options);
    core = created;
    return created;
  }

  /** @type {any} */
  #exports;
  /** @type {WebAssembly.Memory} */
  #memory;
  #io = 0;
  /** @type {Uint8Array} */
  #bytes = new Uint8Array(0);
  /** @type {Uint32Array} */
  #u32 = new Uint32Array(0);
  /** @type {Float64Array} */
  #f64 = new Float64Array(0);
  #ruleCount = 0;
  /** @type {string | null} */
  #slot0Key = null;
  #slot0Length = 0;
  // Slot 0 holds the bytes the module hashed on the last sluice_check: it may reuse that hash.
  #slot0Hashed = false;

  /**
   * Prefer CoreBase.instantiate (or SluiceCore.instantiate).
   * @param {WebAssembly.Instance} instance
   * @param {CoreOptions} [options]
   */
  constructor(instance, options = {}) {
    this.#exports = instance.exports;
    this.#memory = /** @type {WebAssembly.Memory} */ (instance.exports.memory);
    if (typeof this.#exports._initialize === "function") this.#exports._initialize();
    const version = this.#exports.sluice_abi_version();
    if (version !== ABI_VERSION) {
      throw new SluiceError(Status.INVALID_ARGUMENT, `sluice.wasm speaks ABI ${version}, this loader ${ABI_VERSION}`);
    }
    const seed = options.seed ?? crypto.getRandomValues(new Uint32Array(4));
    if (!(seed instanceof Uint32Array) || seed.length !== 4) {
      throw new SluiceError(Status.INVALID_ARGUMENT, "seed must be a Uint32Array of 4 words", "seed");
    }
    this.#check(this.#exports.sluice_init(seed[0], seed[1], seed[2], seed[3]), "init");
    this.#io = this.#exports.sluice_io_buffer();
    this.#refreshViews();
  }

  #refreshViews() {
    const buffer = this.#memory.buffer;
    this.#bytes = new Uint8Array(buffer);
    this.#u32 = new Uint32Array(buffer, this.#io + CHECKS_OFFSET, MAX_CHECKS_PER_CALL * 4);
    this.#f64 = new Float64Array(buffer, this.#io + OUTCOME_OFFSET, 6 + MAX_CHECKS_PER_CALL * 5);
  }

  /** @param {number} result @param {string} what @returns {number} */
  #check(result, what) {
    if (result >= 0) return result;
    const status = -result;
    throw new SluiceError(/** @type {StatusCode} */ (status), `sluice ${what} failed: ${STATUS_NAMES[status] ?? status}`);
  }

  /**
   * addRule adds a rule and returns its id. Throws SluiceError naming the field for invalid input.
   * Algorithm "concurrency" is the concurrency rule: at most `limit` units held at once, each leased for
   * `windowMs` (see acquire, release, renew).
   * countDenied (sliding counter only): denied requests count too, as in Cloudflare's counter.
   * blockMs: a key that exceeds the rule is blocked for it (0 throttles).
   * @param {RuleSpec | (Omit<RuleSpec, "algorithm"> & { algorithm: "concurrency" })} rule
   * @returns {number}
   */
  addRule({ algorithm, limit, windowMs, burst = 0, keyCapacity, countDenied = false, blockMs = 0 }) {
    const index = algorithm === CONCURRENCY ? CONCURRENCY_ALGORITHM : ALGORITHMS.indexOf(/** @type {AlgorithmName} */ (algorithm));
    if (index < 0) {
      throw new SluiceError(Status.INVALID_RULE, `algorithm must be one of ${[...ALGORITHMS, CONCURRENCY].join(", ")}; got ${String(algorithm)}`, "algorithm");
    }
    if (!Number.isInteger(keyCapacity) || keyCapacity < 1 || keyCapacity > 0xffffffff) {
      throw new SluiceError(Status.INVALID_RULE, `keyCapacity must be a whole number >= 1; got ${String(keyCapacity)}`, "keyCapacity");
    }
    // Numbers only: Number("5") would pass a string for a limit, and Number(null) for 0.
    for (const [field, value] of /** @type {[string, unknown][]} */ ([["limit", limit], ["windowMs", windowMs], ["burst", burst], ["blockMs", blockMs]])) {
      if (typeof value !== "number") {
        throw new SluiceError(Status.INVALID_RULE, `${field} must be a number; got ${typeof value} ${String(value)}`, field);
      }
    }
    if (typeof countDenied !== "boolean") {
      throw new SluiceError(Status.INVALID_RULE, `countDenied must be true or false; got ${String(countDenied)}`, "countDenied");
    }
    const kind = countDenied ? index | RULE_COUNT_DENIED : index;
    const result = this.#exports.sluice_add_rule(kind, limit, windowMs, burst, keyCapacity, blockMs);
    this.#refreshViews();
    if (result < 0) {
      const status = /** @type {StatusCode} */ (-result);
      if (status === Status.INVALID_RULE) {
        const coreField = this.#readCString(this.#exports.sluice_error_field());
        const field = FIELD_NAMES[coreField] ?? coreField;
        const given = /** @type {Record<string, unknown>} */ ({ limit, windowMs, burst, keyCapacity, algorithm, countDenied, blockMs })[field];
        throw new SluiceError(status, `${field} is out of range for ${algorithm}: ${String(given)}`, field);
      }
      this.#check(result, "addRule");
    }
    this.#ruleCount++;
    return result;
  }

  /** The rules added so far. @type {number} */
  get ruleCount() {
    return this.#ruleCount;
  }

  /**
   * check decides and (if admitted) charges one request.
   * @param {number} rule
   * @param {string | Uint8Array} key
   * @param {number} cost
   * @param {number} nowMs
   * @returns {Decision}
   */
  check(rule, key, cost, nowMs) {
    return this.#singleDecision(this.#decideOne(rule, key, cost, nowMs, CHARGE, "check"));
  }

  /**
   * peek reports what check would decide, charging nothing and remembering no key.
   * @param {number} rule
   * @param {string | Uint8Array} key
   * @param {number} cost
   * @param {number} nowMs
   * @returns {Decision}
   */
  peek(rule, key, cost, nowMs) {
    return this.#singleDecision(this.#decideOne(rule, key, cost, nowMs, 0, "peek"));
  }

  /**
   * checkAll decides several {rule, key, cost} checks at once, all-or-nothing: either every check
   * admits and all are charged, or none is. With {peek: true}, nothing is charged either way.
   * @param {readonly CheckSpec[]} checks
   * @param {number} nowMs
   * @param {{ peek?: boolean }} [options]
   * @returns {Outcome}
   */
  checkAll(checks, nowMs, options = undefined) {
    const count = checks.length;
    if (count < 1 || count > MAX_CHECKS_PER_CALL) {
      throw new SluiceError(Status.TOO_MANY_CHECKS, `checkAll takes 1 to ${MAX_CHECKS_PER_CALL} checks; got ${count}`);
    }
    for (let i = 0; i < count; i++) {
      const c = checks[i];
      this.#writeCheck(i, c.rule, c.key, c.cost ?? 1);
    }
    const charge = options !== undefined && options.peek === true ? 0 : CHARGE;
    if (typeof nowMs !== "number") throw timeError(nowMs);
    const result = this.#callCheck(count, nowMs, charge);
    if (result < 0) this.#checkDecided(result, "checkAll", nowMs);
    const f = this.#f64;
    /** @type {Decision[]} */
    const decisions = new Array(count);
    if (count === 1) decisions[0] = this.#readDecisionAt(0);
    else for (let i = 0; i < count; i++) decisions[i] = this.#readDecisionAt(DECISION_AT + i * 5);
    return {
      allowed: f[0] === 1,
      limit: f[1],
      remaining: f[2],
      resetMs: f[3],
      retryAfterMs: f[4] < 0 ? Infinity : f[4],
      decidingCheck: f[5],
      checks: decisions,
    };
  }

  /**
   * reset forgets a key of a rule: it is back to its full quota.
   * @param {number} rule
   * @param {string | Uint8Array} key
   * @returns {void}
   */
  reset(rule, key) {
    const id = this.#ruleId(rule);
    const length = this.#writeKey(0, key);
    this.#check(this.#exports.sluice_reset(id, length), "reset");
  }

  /** memoryBytes is the size of the module's linear memory. @type {number} */
  get memoryBytes() {
    return this.#memory.buffer.byteLength;
  }

  // sluice_check, telling the module whether slot 0 still holds the bytes it hashed last time. Whatever
  // the call answers, afterwards it does: the module hashed them, or forgot its hash.
  /** @param {number} count @param {number} nowMs @param {number} flags @returns {number} */
  #callCheck(count, nowMs, flags) {
    const result = this.#exports.sluice_check(count, nowMs, this.#slot0Hashed ? flags | KEY0_UNCHANGED : flags);
    this.#slot0Hashed = true;
    return result;
  }

  // One check through sluice_check_one: its arguments cross as parameters, and nothing but the key is
  // written to memory (nor that, when slot 0 already holds it). The same flags as #callCheck. Returns
  // whether the request was admitted; the rest of the decision is in the outcome area (#singleDecision).
  /**
   * @param {number} rule @param {string | Uint8Array} key @param {number} cost @param {number} nowMs
   * @param {number} flags @param {string} what @returns {boolean}
   */
  #decideOne(rule, key, cost, nowMs, flags, what) {
    const id = this.#ruleId(rule);
    const length = this.#writeKey(0, key);
    checkCost(cost);
    if (typeof nowMs !== "number") throw timeError(nowMs);
    const result = this.#exports.sluice_check_one(id, length, cost, nowMs, this.#slot0Hashed ? flags | KEY0_UNCHANGED : flags);
    this.#slot0Hashed = true;
    if (result < 0) this.#checkDecided(result, what, nowMs);
    return result === 1;
  }

  // The Decision of the single check just decided, built apart from #decideOne and small enough to be
  // inlined with check() into its caller: V8 then drops the object (and the reads of fields nobody
  // uses) when the caller reads only `allowed`. Built inside #decideOne, the object outlived the
  // inlining budget and was allocated on every call (10 ns per decision on one hot key, bench figure 1).
  /** @param {boolean} allowed @returns {Decision} */
  #singleDecision(allowed) {
    const f = this.#f64;
    return { allowed, limit: f[1], remaining: f[2], resetMs: f[3], retryAfterMs: f[4] < 0 ? Infinity : f[4] };
  }

  // A failed check or checkAll. The loader has validated everything it writes but the time, so the
  // module's "invalid argument" is the time: name it.
  /** @param {number} result @param {string} what @param {number} nowMs */
  #checkDecided(result, what, nowMs) {
    if (result === -Status.INVALID_ARGUMENT) throw timeError(nowMs);
    this.#check(result, what);
  }

  /** @param {number} index @param {number} rule @param {string | Uint8Array} key @param {number} cost */
  #writeCheck(index, rule, key, cost) {
    const id = this.#ruleId(rule);
    const length = this.#writeKey(index, key);
    checkCost(cost);
    const u32 = this.#u32;
    const at = index * 4;
    u32[at] = id;
    u32[at + 1] = index * KEY_STRIDE;
    u32[at + 2] = length;
    u32[at + 3] = cost;
  }

  // A rule id handed out by addRule. Checked here because the ABI's u32 would quietly read undefined,
  // "0" or 0.5 as rule 0.
  /** @param {unknown} rule @returns {number} */
  #ruleId(rule) {
    if (typeof rule === "number" && Number.isInteger(rule) && rule >= 0 && rule < this.#ruleCount) return rule;
    throw new SluiceError(Status.UNKNOWN_RULE, `rule must be an id returned by addRule; got ${String(rule)}`, "rule");
  }

  // Copies a key (string as UTF-8, or bytes) to slot `index` of the key area; returns its length.
  // Slot 0 remembers the last string written there: only this class writes the key area, so a key
  // equal to it is already in place (one client hammering a route, or a rule keyed on a constant,
  // skips the copy). Byte keys are never remembered: the caller may change them in place.
  /** @param {number} index @param {unknown} key @returns {number} */
  #writeKey(index, key) {
    if (index === 0) {
      // Only a string can match: the empty marker (null) must never pass for a key.
      if (typeof key === "string" && key === this.#slot0Key) return this.#slot0Length;
      this.#slot0Key = null;
      const length = this.#copyKey(0, key);
      if (typeof key === "string") {
        this.#slot0Key = key;
        this.#slot0Length = length;
      }
      return length;
    }
    return this.#copyKey(index, key);
  }

  /** @param {number} index @param {unknown} key @returns {number} */
  #copyKey(index, key) {
    if (index === 0) this.#slot0Hashed = false;
    const bytes = this.#bytes;
    const start = this.#io + index * KEY_STRIDE;
    if (typeof key === "string") {
      const n = key.length;
      if (n <= MAX_KEY_BYTES) {
        // ASCII is the common case (IPs, ids, routes): a plain loop beats TextEncoder per call.
        let i = 0;
        for (; i < n; i++) {
          const code = key.charCodeAt(i);
          if (code >= 0x80) break;
          bytes[start + i] = code;
        }
        if (i === n) return n;
      }
      const { read, written } = utf8.encodeInto(key, bytes.subarray(start, start + MAX_KEY_BYTES));
      if (read !== n) throw this.#keyTooLong();
      return written;
    }
    if (key instanceof Uint8Array) {
      if (key.length > MAX_KEY_BYTES) throw this.#keyTooLong();
      bytes.set(key, start);
      return key.length;
    }
    throw new SluiceError(Status.INVALID_ARGUMENT, `key must be a string or a Uint8Array; got ${typeof key}`, "key");
  }

  #keyTooLong() {
    return new SluiceError(Status.KEY_TOO_LONG, `key is longer than ${MAX_KEY_BYTES} bytes`, "key");
  }

  // The decision of f64 words [at, at + 5): the outcome's at 0, check i's at DECISION_AT + 5 i.
  /** @param {number} at @returns {Decision} */
  #readDecisionAt(at) {
    const f = this.#f64;
    return {
      allowed: f[at] === 1,
      limit: f[at + 1],
      remaining: f[at + 2],
      resetMs: f[at + 3],
      retryAfterMs: f[at + 4] < 0 ? Infinity : f[at + 4],
    };
  }

  /** @param {number} pointer @returns {string} */
  #readCString(pointer) {

    const bytes = this.#bytes;
    let end = pointer;
    while (end < bytes.length && bytes[end] !== 0) end++;
    return new TextDecoder().decode(bytes.subarray(pointer, end));
  }
}
