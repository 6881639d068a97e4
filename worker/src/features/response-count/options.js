// Counting on the response: which responses a rule counts, from the options countWhen,
// skipSuccessfulRequests and skipFailedRequests (express-rate-limit's names). Validated once, at
// construction; what they build is a plain predicate of the response's status (or the user's own).
import { SluiceConfigError, describe } from "../../engine/errors.js";
import { normalizeCostFrom } from "./cost.js";

/** @import { CostFromOptions } from "./cost.js" */

/**
 * Which responses count.
 * @typedef {object} CountWhenStatus
 * @property {Array<number | string>} status Status codes (100-599) and inclusive ranges written "400-499".
 */

/**
 * The options of counting on the response. `args` are what key functions receive (the context, or
 * request, env, ctx).
 * @template {unknown[]} Args
 * @typedef {object} ResponseCountOptions
 * @property {CountWhenStatus | ((response: Response, ...args: Args) => boolean | Promise<boolean>)} [countWhen]
 *   Count only responses that match: a list of statuses and ranges, or a predicate. The rule is checked
 *   before the handler (a key with nothing left is refused, the handler does not run) and charged after
 *   it, only when the response matches.
 * @property {boolean} [skipSuccessfulRequests] Count only responses with a status of 400 or more.
 * @property {boolean} [skipFailedRequests] Count only responses with a status below 400.
 * @property {CostFromOptions} [costFrom] Charge what a response header says the request cost (cost.js), after the
 *   response; before the handler a key needs 1 unit left. Not with `cost`.
 */

export const RESPONSE_COUNT_FIELDS = Object.freeze(["countWhen", "skipSuccessfulRequests", "skipFailedRequests", "costFrom"]);

const STATUS_RANGE = /^([1-5][0-9][0-9])-([1-5][0-9][0-9])$/;

/** @param {unknown} value @param {string} field @returns {[number, number]} */
function statusRange(value, field) {
  if (typeof value === "number") {
    if (!Number.isInteger(value) || value < 100 || value > 599) throw new SluiceConfigError(field, `must be a status from 100 to 599; got ${describe(value)}`);
    return [value, value];
  }
  const match = typeof value === "string" ? STATUS_RANGE.exec(value) : null;
  if (match === null) throw new SluiceConfigError(field, `must be a status (a number) or a range "400-499"; got ${describe(value)}`);
  const low = Number(match[1]);
  const high = Number(match[2]);
  if (low > high || high > 599) throw new SluiceConfigError(field, `must be a range from low to high within 100-599; got ${describe(value)}`);
  return [low, high];
}

/**
 * responseCounting splits counting on the response out of a limiter's options: `counts` is null when
 * every request counts before the handler (none of the fields given), else the predicate of the
 * responses that count; `cost` is costFrom's reader, or null; `limiterOptions` are the options without
 * those fields (with costFrom, a cost function that charges what the response said: `pendingCost`).
 * @param {Record<string, any>} options
 * @returns {{ counts: null | ((response: Response, args: unknown[]) => boolean | Promise<boolean>), cost: null | ReturnType<typeof normalizeCostFrom>, pendingCost: WeakMap<object, number>, limiterOptions: any }}
 */
export function responseCounting(options) {
  const pendingCost = new WeakMap();
  if (options === null || typeof options !== "object") return { counts: null, cost: null, pendingCost, limiterOptions: options };
  const { costFrom, ...rest } = options;
  if (costFrom === undefined) return { ...countingOf(rest), cost: null, pendingCost };
  if (rest.cost !== undefined || (Array.isArray(rest.rules) && rest.rules.some((rule) => rule !== null && typeof rule === "object" && rule.cost !== undefined))) {
    throw new SluiceConfigError("costFrom", "cannot be given with cost: the response says what the request cost");
  }
  const cost = normalizeCostFrom(costFrom);
  const { counts, limiterOptions } = countingOf(rest);
  // Before the handler nothing is pending: a key needs 1 unit left. After it, the response's cost.
  limiterOptions.cost = (/** @type {object} */ first) => pendingCost.get(first) ?? 1;
  return { counts: counts ?? (() => true), cost, pendingCost, limiterOptions };
}

/**
 * Which responses count (null: all), from countWhen or skipSuccessfulRequests / skipFailedRequests,
 * and the limiter's own options (the rest).
 * @param {Record<string, any>} options
 * @returns {{ counts: ((response: Response, args: readonly unknown[]) => boolean | Promise<boolean>) | null, limiterOptions: Record<string, any> }}
 */
function countingOf(options) {
  const { countWhen, skipSuccessfulRequests, skipFailedRequests, ...limiterOptions } = options;
  for (const [field, value] of [["skipSuccessfulRequests", skipSuccessfulRequests], ["skipFailedRequests", skipFailedRequests]]) {
    if (value !== undefined && typeof value !== "boolean") throw new SluiceConfigError(field, `must be true or false; got ${describe(value)}`);
  }
  if (skipSuccessfulRequests === true && skipFailedRequests === true) {
    throw new SluiceConfigError("skipFailedRequests", "cannot be true with skipSuccessfulRequests: the rule would count nothing");
  }
  if (countWhen !== undefined && (skipSuccessfulRequests !== undefined || skipFailedRequests !== undefined)) {
    throw new SluiceConfigError("countWhen", "cannot be given with skipSuccessfulRequests or skipFailedRequests: give one way of choosing");
  }
  if (skipSuccessfulRequests === true) return { counts: (/** @type {Response} */ response) => response.status >= 400, limiterOptions };
  if (skipFailedRequests === true) return { counts: (/** @type {Response} */ response) => response.status < 400, limiterOptions };
  if (countWhen === undefined) return { counts: null, limiterOptions };
  if (typeof countWhen === "function") {
    return {
      counts: async (/** @type {Response} */ response, /** @type {readonly unknown[]} */ args) => {
        const verdict = await countWhen(response, ...args);
        if (typeof verdict !== "boolean") throw new TypeError(`sluice: countWhen returned ${String(verdict)}; it must return true or false`);
        return verdict;
      },
      limiterOptions,
    };
  }
  if (countWhen === null || typeof countWhen !== "object" || Array.isArray(countWhen)) {
    throw new SluiceConfigError("countWhen", `must be { status: [...] } or a function of the response; got ${describe(countWhen)}`);
  }
  for (const field of Object.keys(countWhen)) {
    if (field !== "status") throw new SluiceConfigError(`countWhen.${field}`, "is not an option of countWhen (it takes status)");
  }
  if (!Array.isArray(countWhen.status) || countWhen.status.length < 1 || countWhen.status.length > 32) {
    throw new SluiceConfigError("countWhen.status", `must be a list of 1 to 32 statuses or ranges; got ${describe(countWhen.status)}`);
  }
  const ranges = countWhen.status.map((/** @type {unknown} */ value, /** @type {number} */ i) => statusRange(value, `countWhen.status[${i}]`));
  return { counts: (/** @type {Response} */ response) => ranges.some((/** @type {[number, number]} */ [low, high]) => response.status >= low && response.status <= high), limiterOptions };
}
