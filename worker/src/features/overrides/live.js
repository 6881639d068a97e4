// Overrides from the live table (table-object.js), applied in every isolate within a stated bound: each
// isolate keeps a copy of the table and, on the first request that finds its copy older than
// `refreshMs` (on the limiter's clock), fetches the table before deciding. So a change written at time t
// decides every request from t + refreshMs on, in every isolate. When the object cannot be reached, the
// copy in hand keeps deciding (none at first: the rule's own limit), and the failure is counted.
import { SluiceConfigError, describe } from "../../engine/errors.js";
import { normalizeOverrides } from "./overrides.js";

export const LIVE_TABLE = Symbol.for("sluice.liveOverrides");

/**
 * How a live table's copies fared in this isolate.
 * @typedef {object} LiveOverridesCounters
 * @property {number} refreshes Fetches of the table that answered.
 * @property {number} refreshFailures Fetches that failed (the copy in hand kept deciding).
 * @property {number} version The version of the copy in hand (0: none yet).
 */

/**
 * liveOverrides names the live table a rule's `overrides` reads.
 * @param {{ binding?: string, name?: string, refreshMs?: number }} [options] binding: the Durable Object
 *   namespace of SluiceOverridesObject in env (default "SLUICE_OVERRIDES"); name: the table (default
 *   "overrides"); refreshMs: how old a copy may be before a request fetches the table (default 10,000).
 */
export function liveOverrides(options = {}) {
  const { binding = "SLUICE_OVERRIDES", name = "overrides", refreshMs = 10_000, ...unknown } = options;
  for (const field of Object.keys(unknown)) throw new SluiceConfigError(`liveOverrides.${field}`, "is not an option (binding, name, refreshMs)");
  if (typeof binding !== "string" || binding === "") throw new SluiceConfigError("liveOverrides.binding", `must be a binding name; got ${describe(binding)}`);
  if (typeof name !== "string" || name === "" || name.length > 64) throw new SluiceConfigError("liveOverrides.name", `must be 1 to 64 characters; got ${describe(name)}`);
  if (!Number.isSafeInteger(refreshMs) || refreshMs < 100) throw new SluiceConfigError("liveOverrides.refreshMs", `must be a whole number of milliseconds >= 100; got ${describe(refreshMs)}`);

  /** @type {LiveOverridesCounters} */
  const counters = { refreshes: 0, refreshFailures: 0, version: 0 };
  /** @type {(keyText: unknown) => number | undefined} */
  let lookup = () => undefined;
  let fetchedAtMs = -Infinity;
  /** @type {Promise<void> | null} */
  let inFlight = null;

  /** @param {any} env The Worker's env, as refresh gets it (the binding is looked up by name and checked). @returns {Promise<void>} */
  async function fetchTable(env) {
    const namespace = env?.[binding];
    if (namespace === undefined || typeof namespace.idFromName !== "function") {
      throw new SluiceConfigError(`liveOverrides.binding`, `names ${describe(binding)}, which env does not have: bind SluiceOverridesObject under that name`);
    }
    const stub = namespace.get(namespace.idFromName(name));
    const table = await stub.list();
    // The object validated every write; validated again here, since a copy decides requests.
    lookup = table.overrides.length === 0 ? () => undefined : normalizeOverrides(table.overrides, "overrides").overrideOf;
    counters.version = table.version;
    counters.refreshes++;
  }

  return Object.freeze({
    [LIVE_TABLE]: true,
    counters,
    /**
     * refresh fetches the table when the copy in hand is older than refreshMs at `nowMs` (once for the
     * requests waiting at the same moment).
     * @param {any} env @param {number} nowMs
     */
    async refresh(env, nowMs) {
      if (nowMs - fetchedAtMs < refreshMs) return;
      if (inFlight === null) {
        inFlight = fetchTable(env)
          .then(() => {
            fetchedAtMs = nowMs;
          })
          .catch((error) => {
            if (error instanceof SluiceConfigError) throw error;
            counters.refreshFailures++;
          })
          .finally(() => {
            inFlight = null;
          });
      }
      await inFlight;
    },
    /** @param {unknown} keyText */
    overrideOf(keyText) {
      return lookup(keyText);
    },
  });
}

/** isLiveTable reports whether `value` came from liveOverrides(). @param {unknown} value @returns {value is ReturnType<typeof liveOverrides>} */
export function isLiveTable(value) {
  return value !== null && typeof value === "object" && /** @type {any} */ (value)[LIVE_TABLE] === true;
}
