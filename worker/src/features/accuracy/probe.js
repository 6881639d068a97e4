// How far an approximate limiter is from exact, measured on the user's own traffic: a probe built by
// accuracyProbe({ sample }) and given to a limiter as its `accuracy` option (an imported value, so an
// app that does not measure pays nothing for it). A share of the keys is sampled, by a hash of the key, so a sampled key is sampled in every
// isolate and for every one of its requests; each request of a sampled key is also sent, in the
// background, to a reference: the same rules, decided exactly by a Durable Object of its own (its
// objects are named apart, so the reference never touches the real counts). The sliding counter's
// reference is the sliding-window log, the exact form of the same window; every other algorithm is
// compared with itself, counted in one place. Each answer of the reference is compared with what the
// limiter decided:
//   agreed          both admitted, or both denied;
//   overAdmitted    the limiter admitted what exact counting would have denied;
//   underAdmitted   the limiter denied what exact counting would have admitted;
//   failed          the reference did not answer (its binding is missing, or the object failed).
// The reference sees the same arrivals as the limiter and decides them on its own counts, so the
// comparison is "exact counting on this stream", the question a user choosing a mode asks.
//
// Cost: nothing on the request path (the reference call goes to ctx.waitUntil); one Durable Object
// call per request of a sampled key, about `sample` of all requests; the reference object's storage.
import { SluiceConfigError, describe } from "../../engine/errors.js";
import { createDurableStore } from "../../stores/durable.js";

/** @import { NormalizedRule, Outcome, StoreCheck } from "../../stores/store.js" */

/**
 * @typedef {object} AccuracyOptions
 * @property {number} sample The share of keys checked against exact counting, from 0 (none) to 1 (every key).
 * @property {string} [binding] The Durable Object namespace (bound to SluiceDurableObject) the reference decides in. Default "SLUICE_DO".
 */
/**
 * The probe's counters (limiter.accuracy).
 * @typedef {object} AccuracyCounters
 * @property {number} sampled Requests sent to the reference.
 * @property {number} agreed
 * @property {number} overAdmitted The limiter admitted, exact counting would have denied.
 * @property {number} underAdmitted The limiter denied, exact counting would have admitted.
 * @property {number} failed The reference did not answer.
 */

const OPTION_FIELDS = ["sample", "binding"];
// The reference's objects: named apart from the durable store's ("sluice"), so no real count moves.
const REFERENCE_NAME = "sluice-accuracy";

/**
 * normalizeAccuracy validates accuracyProbe's options { sample, binding }.
 * @param {unknown} value
 * @returns {{ sample: number, binding: string }}
 */
export function normalizeAccuracy(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new SluiceConfigError("accuracy", `must be an object { sample, binding }; got ${describe(value)}`);
  for (const field of Object.keys(value)) {
    if (!OPTION_FIELDS.includes(field)) throw new SluiceConfigError(`accuracy.${field}`, `is not an option (known: ${OPTION_FIELDS.join(", ")})`);
  }
  const { sample, binding = "SLUICE_DO" } = /** @type {any} */ (value);
  if (typeof sample !== "number" || !(sample >= 0 && sample <= 1)) throw new SluiceConfigError("accuracy.sample", `must be a number from 0 to 1 (the share of keys checked); got ${describe(sample)}`);
  if (typeof binding !== "string" || binding === "") throw new SluiceConfigError("accuracy.binding", `must be the name of a Durable Object binding; got ${describe(binding)}`);
  return { sample, binding };
}

/**
 * The reference rule of `rule`: the same quota, decided exactly. A sliding counter (which estimates the
 * previous window's share) is compared with the sliding log of the same window; with countDenied it
 * stays a sliding counter, since the log does not count denials.
 * @param {NormalizedRule} rule
 * @returns {NormalizedRule}
 */
export function referenceRule(rule) {
  if (rule.algorithm !== "sliding-counter" || rule.countDenied) return { ...rule, id: `${rule.id}|exact` };
  return { ...rule, algorithm: "sliding-log", id: `${rule.id}|exact|sliding-log` };
}

/**
 * Whether `key` is in the sample: its 32-bit FNV-1a hash, as a fraction of 2^32, is below `sample`.
 * The same key gets the same answer in every isolate.
 * @param {string} key @param {number} sample @returns {boolean}
 */
export function sampled(key, sample) {
  if (sample >= 1) return true;
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) / 2 ** 32 < sample;
}

/**
 * The probe a limiter's `accuracy` option takes: `observe` is called by the limiter with every request
 * it decided; `counters` is how often it agreed with exact counting.
 * @typedef {{ observe(checks: readonly StoreCheck[], outcome: Outcome, env: any, ctx: any): Promise<void> | null, readonly counters: Readonly<AccuracyCounters>, readonly sample: number }} AccuracyProbe
 */

/**
 * accuracyProbe returns a probe to give to limiters as `accuracy`: it checks `sample` of the keys
 * (0 to 1) against exact counting in the Durable Object namespace `binding` (default "SLUICE_DO"), in
 * the background. Throws a SluiceConfigError naming a bad option.
 *
 *   const accuracy = accuracyProbe({ sample: 0.01 });
 *   app.use("/api/*", rateLimit({ key: ip(), limit: 100, windowSec: 60, accuracy }));
 *   // later: accuracy.counters -> { sampled, agreed, overAdmitted, underAdmitted, failed }
 * @param {AccuracyOptions} options
 * @returns {AccuracyProbe}
 */
export function accuracyProbe(options) {
  const { sample, binding } = normalizeAccuracy(options);
  const reference = createDurableStore({ binding, name: REFERENCE_NAME });
  /** @type {AccuracyCounters} */
  const counters = { sampled: 0, agreed: 0, overAdmitted: 0, underAdmitted: 0, failed: 0 };

  /**
   * Sends a decided request to the reference if its first key is sampled, and compares the answers.
   * Returns the comparison's promise (already handed to ctx.waitUntil), or null when not sampled.
   * @param {readonly StoreCheck[]} checks
   * @param {Outcome} outcome What the limiter decided (before any shadow mode).
   * @param {any} env
   * @param {any} ctx
   */
  function observe(checks, outcome, env, ctx) {
    // A refusal by an auto-block charged no rule: counting it in the reference would charge exact
    // counting for what the limiter never counted, and compare a block with a rate as under-admission.
    if (outcome.autoBlocked === true || checks.length === 0 || !sampled(checks[0].key, sample)) return null;
    counters.sampled++;
    const referenceChecks = checks.map((check) => ({ ...check, rule: referenceRule(check.rule) }));
    const compared = (async () => {
      try {
        const exact = await reference.decide(referenceChecks, { env });
        if (exact.allowed === outcome.allowed) counters.agreed++;
        else if (outcome.allowed) counters.overAdmitted++;
        else counters.underAdmitted++;
      } catch {
        counters.failed++;
      }
    })();
    if (typeof ctx?.waitUntil === "function") ctx.waitUntil(compared);
    return compared;
  }

  return { observe, counters: /** @type {Readonly<AccuracyCounters>} */ (counters), sample };
}
