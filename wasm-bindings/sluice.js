// The JS side of the sluice.wasm boundary: SluiceCore wraps the module's whole C ABI (sluice_abi.h) in
// one class. Deciding checks is CoreBase's (core-base.js); the rest of the ABI is here, as functions of
// any CoreBase (what the library's own modules call, so that an app bundles only those it reaches)
// and as SluiceCore's methods (the public API of sluice/core).
import { CoreBase, SluiceError, Status, checkCost, coreInternals as inside, timeError } from "./core-base.js";

export { ABI_VERSION, ALGORITHMS, CoreBase, MAX_CHECKS_PER_CALL, MAX_KEY_BYTES, SluiceError, Status } from "./core-base.js";

/** @typedef {import("./core-base.js").AlgorithmName} AlgorithmName */
/** @typedef {import("./core-base.js").StatusCode} StatusCode */
/** @typedef {import("./core-base.js").RuleSpec} RuleSpec */
/** @typedef {import("./core-base.js").Decision} Decision */
/** @typedef {import("./core-base.js").CheckSpec} CheckSpec */
/** @typedef {import("./core-base.js").Outcome} Outcome */
/** @typedef {import("./core-base.js").CoreOutcomeFields} CoreOutcomeFields */
/** @typedef {import("./core-base.js").TableStats} TableStats */
/** @typedef {import("./core-base.js").CoreOptions} CoreOptions */

/**
 * The algorithms whose quota can be lent exactly (mirrors can_lend in cpp/include/sluice/lease.hpp;
 * docs/leases.md says how, per algorithm).
 * @type {readonly AlgorithmName[]}
 */
export const LENDING_ALGORITHMS = /* @__PURE__ */ Object.freeze(["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "leaky-bucket", "gcra"]);

/**
 * The lending algorithms that count lent units in a window: unused units can be given back, and
 * nothing is held back beyond the units themselves (a bucket's lease also holds back its drain).
 * @type {readonly AlgorithmName[]}
 */
export const WINDOW_LENDING_ALGORITHMS = /* @__PURE__ */ Object.freeze(["fixed-window", "sliding-counter"]);

/**
 * The lending algorithms that take unused lent units back (giveBack): the windows, and the sliding
 * log, which holds a lent unit from its lease's end (a bucket drains unused units by itself instead).
 * @type {readonly AlgorithmName[]}
 */
export const RETURNING_ALGORITHMS = /* @__PURE__ */ Object.freeze(["fixed-window", "sliding-log", "sliding-counter"]);

// sluice_concurrency operations (sluice_abi.h).
const ACQUIRE = 0;
const RELEASE = 1;
const RENEW = 2;

/**
 * coreAcquire takes `cost` units of a concurrency rule's key for `holder` (a 32-bit id the host chose)
 * if they fit: the decision's `allowed`. A holder that neither renews nor releases loses its units when
 * the rule's lease (its windowMs) runs out.
 * @param {CoreBase} core @param {number} rule @param {string | Uint8Array} key @param {number} holder
 * @param {number} cost @param {number} nowMs @returns {Decision}
 */
export function coreAcquire(core, rule, key, holder, cost, nowMs) {
  checkCost(cost);
  return concurrency(core, rule, key, ACQUIRE, holder, cost, nowMs, "acquire");
}

/**
 * coreRelease gives back every unit `holder` has on the key; `allowed` reports whether it had live ones.
 * @param {CoreBase} core @param {number} rule @param {string | Uint8Array} key @param {number} holder
 * @param {number} nowMs @returns {Decision}
 */
export function coreRelease(core, rule, key, holder, nowMs) {
  return concurrency(core, rule, key, RELEASE, holder, 1, nowMs, "release");
}

/**
 * coreRenew restarts the lease of every live unit `holder` has on the key; `allowed` is false when it
 * has none (its lease ran out, or it released), and its units may then be someone else's.
 * @param {CoreBase} core @param {number} rule @param {string | Uint8Array} key @param {number} holder
 * @param {number} nowMs @returns {Decision}
 */
export function coreRenew(core, rule, key, holder, nowMs) {
  return concurrency(core, rule, key, RENEW, holder, 1, nowMs, "renew");
}

/**
 * @param {CoreBase} core @param {number} rule @param {string | Uint8Array} key @param {number} op
 * @param {number} holder @param {number} cost @param {number} nowMs @param {string} what
 * @returns {Decision}
 */
function concurrency(core, rule, key, op, holder, cost, nowMs, what) {
  const id = inside.ruleId(core, rule);
  if (!Number.isInteger(holder) || holder < 0 || holder > 0xffffffff) {
    throw new SluiceError(Status.INVALID_ARGUMENT, `holder must be a whole number from 0 to 2^32 - 1; got ${String(holder)}`, "holder");
  }
  if (typeof nowMs !== "number") throw timeError(nowMs);
  const length = inside.writeKey(core, key);
  const result = inside.exports(core).sluice_concurrency(id, length, op, holder, cost, nowMs);
  // The call hashed the key itself and the module forgot any hash it kept for slot 0.
  inside.forgetHash(core);
  if (result === -Status.INVALID_ARGUMENT && Number.isInteger(nowMs) && nowMs >= 0 && nowMs <= 2 ** 42) {
    throw new SluiceError(Status.INVALID_ARGUMENT, `sluice ${what} failed: rule ${id} is not a concurrency rule`, "rule");
  }
  if (result < 0) inside.checkDecided(core, result, what, nowMs);
  return inside.decision(core);
}

/**
 * coreExportState returns a key's state as bytes (a copy), or null if the key holds none.
 * @param {CoreBase} core @param {number} rule @param {string | Uint8Array} key @returns {Uint8Array | null}
 */
export function coreExportState(core, rule, key) {
  const id = inside.ruleId(core, rule);
  const length = inside.writeKey(core, key);
  const exports = inside.exports(core);
  const result = exports.sluice_export_state(id, length);
  if (result === -Status.NOT_FOUND) return null;
  inside.check(core, result, "exportState");
  const at = exports.sluice_state_buffer();
  return inside.bytes(core).slice(at, at + result);
}

/**
 * coreImportState replaces a key's state with bytes from exportState of a rule with the same parameters.
 * @param {CoreBase} core @param {number} rule @param {string | Uint8Array} key @param {Uint8Array} state
 * @returns {void}
 */
export function coreImportState(core, rule, key, state) {
  const id = inside.ruleId(core, rule);
  const length = inside.writeKey(core, key);
  const exports = inside.exports(core);
  if (!(state instanceof Uint8Array) || state.length > exports.sluice_state_buffer_bytes()) {
    throw new SluiceError(Status.INVALID_STATE, "state must be a Uint8Array from exportState");
  }
  inside.bytes(core).set(state, exports.sluice_state_buffer());
  inside.check(core, exports.sluice_import_state(id, length, state.length), "importState");
}

/**
 * coreStats describes a rule's key table and its eviction summary (SluiceCore.stats).
 * @param {CoreBase} core @param {number} rule @returns {TableStats}
 */
export function coreStats(core, rule) {
  inside.check(core, inside.exports(core).sluice_stats(inside.ruleId(core, rule)), "stats");
  const f = inside.f64(core);
  return {
    keys: f[0],
    slots: f[1],
    memoryBytes: f[2],
    evictions: f[3],
    evictionsRestricting: f[4],
    summaryStarts: f[5],
    summaryBytes: f[6],
  };
}

/**
 * coreLend lends up to `wanted` units of a key's quota for at most `leaseMs` from `nowMs` (SluiceCore.lend);
 * a fixed window or sliding counter whose window ends within `aheadMs` lends from the next window,
 * usable from `startsAtMs`.
 * @param {CoreBase} core @param {number} rule @param {string | Uint8Array} key @param {number} wanted
 * @param {number} leaseMs @param {number} nowMs @param {number} [aheadMs]
 * @returns {{units: number, expiresAtMs: number, remaining: number, startsAtMs: number}}
 */
export function coreLend(core, rule, key, wanted, leaseMs, nowMs, aheadMs = 0) {
  const id = inside.ruleId(core, rule);
  const length = inside.writeKey(core, key);
  if (!Number.isInteger(wanted) || wanted < 0 || wanted > 0x80000000) {
    throw new SluiceError(Status.INVALID_COST, `wanted must be a whole number from 0 to 2^31; got ${String(wanted)}`, "wanted");
  }
  if (typeof nowMs !== "number") throw timeError(nowMs);
  inside.forgetHash(core);
  const result = inside.exports(core).sluice_lend(id, length, wanted, leaseMs, nowMs, aheadMs);
  if (result === -Status.INVALID_ARGUMENT) {
    throw new SluiceError(Status.INVALID_ARGUMENT, `lend needs a rule that can lend (${LENDING_ALGORITHMS.join(", ")}), leaseMs >= 1, aheadMs >= 0 and a valid nowMs; got leaseMs ${String(leaseMs)}, aheadMs ${String(aheadMs)}, nowMs ${String(nowMs)}`);
  }
  inside.check(core, result, "lend");
  const f = inside.f64(core);
  return { units: f[0], expiresAtMs: f[1], remaining: f[2], startsAtMs: f[3] };
}

/**
 * coreGiveBack returns `units` unused units of a lease (SluiceCore.giveBack); returns how many the key took back.
 * @param {CoreBase} core @param {number} rule @param {string | Uint8Array} key @param {number} units
 * @param {number} expiresAtMs @returns {number}
 */
export function coreGiveBack(core, rule, key, units, expiresAtMs) {
  const id = inside.ruleId(core, rule);
  const length = inside.writeKey(core, key);
  if (!Number.isInteger(units) || units < 0 || units > 0x80000000) {
    throw new SluiceError(Status.INVALID_COST, `units must be a whole number from 0 to 2^31; got ${String(units)}`, "units");
  }
  inside.forgetHash(core);
  const result = inside.exports(core).sluice_give_back(id, length, units, expiresAtMs);
  if (result === -Status.INVALID_ARGUMENT) {
    throw new SluiceError(Status.INVALID_ARGUMENT, `giveBack needs a rule that can lend and an expiresAtMs from lend; got ${String(expiresAtMs)}`);
  }
  return inside.check(core, result, "giveBack");
}

/**
 * SluiceCore is one limiter: one wasm instance, its rules and its key tables, with the whole ABI as
 * methods. Create it with SluiceCore.instantiate(module) in a Worker (where `module` is the imported
 * .wasm) or await SluiceCore.fromBytes(bytes) in Node.
 */
export class SluiceCore extends CoreBase {
  /**
   * @param {WebAssembly.Module} module
   * @param {CoreOptions} [options]
   * @returns {SluiceCore}
   */
  static instantiate(module, options = {}) {
    return inside.instantiateAs(SluiceCore, module, options);
  }

  /**
   * @param {BufferSource} bytes
   * @param {CoreOptions} [options]
   * @returns {Promise<SluiceCore>}
   */
  static async fromBytes(bytes, options = {}) {
    // @cloudflare/workers-types leave out WebAssembly.compile: workerd refuses it, Node has it.
    const compile = /** @type {(bytes: BufferSource) => Promise<WebAssembly.Module>} */ (/** @type {any} */ (WebAssembly).compile);
    return SluiceCore.instantiate(await compile(bytes), options);
  }

  /**
   * acquire takes `cost` units of a concurrency rule's key for `holder` (a 32-bit id the host chose) if
   * they fit: the decision's `allowed`. A holder that neither renews nor releases loses its units when
   * the rule's lease (its windowMs) runs out.
   * @param {number} rule
   * @param {string | Uint8Array} key
   * @param {number} holder
   * @param {number} cost
   * @param {number} nowMs
   * @returns {Decision}
   */
  acquire(rule, key, holder, cost, nowMs) {
    return coreAcquire(this, rule, key, holder, cost, nowMs);
  }

  /**
   * release gives back every unit `holder` has on the key; `allowed` reports whether it had live ones.
   * @param {number} rule
   * @param {string | Uint8Array} key
   * @param {number} holder
   * @param {number} nowMs
   * @returns {Decision}
   */
  release(rule, key, holder, nowMs) {
    return coreRelease(this, rule, key, holder, nowMs);
  }

  /**
   * renew restarts the lease of every live unit `holder` has on the key; `allowed` is false when it has
   * none (its lease ran out, or it released), and its units may then be someone else's.
   * @param {number} rule
   * @param {string | Uint8Array} key
   * @param {number} holder
   * @param {number} nowMs
   * @returns {Decision}
   */
  renew(rule, key, holder, nowMs) {
    return coreRenew(this, rule, key, holder, nowMs);
  }

  /**
   * exportState returns a key's state as bytes (a copy), or null if the key holds none.
   * @param {number} rule
   * @param {string | Uint8Array} key
   * @returns {Uint8Array | null}
   */
  exportState(rule, key) {
    return coreExportState(this, rule, key);
  }

  /**
   * importState replaces a key's state with bytes from exportState of a rule with the same parameters.
   * @param {number} rule
   * @param {string | Uint8Array} key
   * @param {Uint8Array} state
   * @returns {void}
   */
  importState(rule, key, state) {
    return coreImportState(this, rule, key, state);
  }

  /**
   * stats describes a rule's key table and its eviction summary. evictionsRestricting (evicted keys
   * that still owed quota) above 0 means the table is too small for the keys being limited at once;
   * summaryStarts counts charged requests of new keys that started from what evicted keys owed.
   * @param {number} rule
   * @returns {TableStats}
   */
  stats(rule) {
    return coreStats(this, rule);
  }

  /**
   * lend lends up to `wanted` units of a key's quota for at most `leaseMs` from `nowMs` (rules of
   * LENDING_ALGORITHMS; see docs/leases.md): what is left / 4 at most, charged to the key now (a
   * bucket's as if spent when the lease ends, a sliding log's as admitted when it ends). A fixed window
   * or sliding counter whose window ends within `aheadMs` lends from the next window instead, usable
   * from `startsAtMs` (that window's start; otherwise nowMs). Returns { units, expiresAtMs, remaining,
   * startsAtMs }; units 0 when the key is too near its limit.
   * @param {number} rule
   * @param {string | Uint8Array} key
   * @param {number} wanted
   * @param {number} leaseMs
   * @param {number} nowMs
   * @param {number} [aheadMs] Default 0: never from the next window.
   * @returns {{units: number, expiresAtMs: number, remaining: number, startsAtMs: number}}
   */
  lend(rule, key, wanted, leaseMs, nowMs, aheadMs = 0) {
    return coreLend(this, rule, key, wanted, leaseMs, nowMs, aheadMs);
  }

  /**
   * giveBack returns `units` unused units of a lease of `key` that expires at `expiresAtMs`; returns how
   * many the key took back (0 once the lease's window is over: they lapsed with it; 0 for a bucket,
   * which drains them by itself). A sliding log's leases with the same end are interchangeable.
   * @param {number} rule
   * @param {string | Uint8Array} key
   * @param {number} units
   * @param {number} expiresAtMs
   * @returns {number}
   */
  giveBack(rule, key, units, expiresAtMs) {
    return coreGiveBack(this, rule, key, units, expiresAtMs);
  }
}
