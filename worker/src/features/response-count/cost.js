// Cost from the origin: the handler (or the upstream) says in a response header what a request cost
// (the WAF's complexity-based limiting); it is charged after the response. The header is the origin's
// word, not the client's, but it is still parsed as hostile input: a canonical decimal integer from 1
// to `max`; above `max` it charges `max`; missing or anything else charges `defaultCost`. Each case is
// counted (costCounters), and the header never reaches the client.
import { SluiceConfigError, describe } from "../../engine/errors.js";

/**
 * @typedef {object} CostFromOptions
 * @property {string} header The response header holding the cost (a token: letters, digits, !#$%&'*+-.^_`|~).
 * @property {number} [max] The most one response may cost; a larger value charges this. Default 1000.
 * @property {number} [default] What a response without a valid cost charges. Default 1.
 */

/**
 * How the costs of responses were read, per limiter.
 * @typedef {object} CostCounters
 * @property {number} fromHeader Responses charged the cost their header gave.
 * @property {number} clamped Responses whose header gave more than max: charged max.
 * @property {number} missing Responses without the header: charged the default.
 * @property {number} invalid Responses whose header was not a whole number from 1 up: charged the default.
 * @property {number} exhausted Charges above what the key had left: the key was charged what it had (it cannot go below 0).
 */

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/;
const DECIMAL = /^[0-9]{1,64}$/;
const MAX_COST = 2 ** 31;

/** @param {unknown} value @param {string} field @param {number} low @param {number} high */
function whole(value, field, low, high) {
  if (!Number.isSafeInteger(value) || /** @type {number} */ (value) < low || /** @type {number} */ (value) > high) {
    throw new SluiceConfigError(field, `must be a whole number from ${low} to ${high}; got ${describe(value)}`);
  }
  return /** @type {number} */ (value);
}

/**
 * normalizeCostFrom validates costFrom and returns `costOf(response)`, which reads a response's cost and
 * counts how, with the counters it fills.
 * @param {unknown} costFrom
 */
export function normalizeCostFrom(costFrom) {
  if (costFrom === null || typeof costFrom !== "object" || Array.isArray(costFrom)) {
    throw new SluiceConfigError("costFrom", `must be { header, max?, default? }; got ${describe(costFrom)}`);
  }
  const options = /** @type {Record<string, unknown>} */ (costFrom);
  for (const field of Object.keys(options)) {
    if (!["header", "max", "default"].includes(field)) throw new SluiceConfigError(`costFrom.${field}`, "is not an option of costFrom (known: header, max, default)");
  }
  if (typeof options.header !== "string" || !TOKEN.test(options.header)) {
    throw new SluiceConfigError("costFrom.header", `must be a header name (1 to 64 token characters); got ${describe(options.header)}`);
  }
  const header = options.header.toLowerCase();
  const max = options.max === undefined ? 1000 : whole(options.max, "costFrom.max", 1, MAX_COST);
  const defaultCost = options.default === undefined ? 1 : whole(options.default, "costFrom.default", 1, max);
  /** @type {CostCounters} */
  const counters = { fromHeader: 0, clamped: 0, missing: 0, invalid: 0, exhausted: 0 };
  /**
   * costOf reads `response`'s cost (and counts how).
   * @param {Response} response
   * @returns {number}
   */
  function costOf(response) {
    const raw = response.headers.get(header);
    if (raw === null) {
      counters.missing++;
      return defaultCost;
    }
    const text = raw.trim();
    // Canonical decimal only: no sign, exponent, fraction, hex or list ("1,2"); leading zeros are harmless.
    if (!DECIMAL.test(text) || Number(text) < 1) {
      counters.invalid++;
      return defaultCost;
    }
    const cost = Number(text);
    if (cost > max) {
      counters.clamped++;
      return max;
    }
    counters.fromHeader++;
    return cost;
  }
  return { header, costOf, counters };
}
