// Taking back the charge of a request whose script call was given up on but landed anyway, when the
// fallback chain answered it with a denial (the answered decision wins; redis-given-up.js): the key is
// set to what the call would have written without that request (and without any taken back before),
// recomputed by the core from the same states at the same instant, if the key still holds the call's
// write. Another isolate's write over it first leaves the charge (missed: erring towards denying).
import { parseReply } from "./redis-cas-step.js";
import { DELETE } from "./redis-values.js";

/** @import { Outcome } from "./store.js" */
/** @import { RedisStoreParts } from "./redis.js" */
/** @import { RedisLink } from "./redis-connection.js" */
/** @import { GivenUpCall } from "./redis-given-up.js" */

// How many times taking back a late write may be refused because another isolate holds the key.
const UNDO_ATTEMPTS = 3;

/**
 * takeBack takes back the charge of a given-up request whose late outcome (from its DeadlineError's
 * `late`) admitted it while the fallback chain answered otherwise.
 * @param {RedisStoreParts} parts
 * @param {Outcome} outcome
 * @returns {Promise<{ undone: number, missed: number }>}
 */
export async function takeBack(parts, outcome) {
  if (parts.givenUp.wasAppended(outcome)) {
    parts.counters.undoMissed++; // a log entry others may have decided on: the charge stays, counted
    return { undone: 0, missed: 1 };
  }
  const found = parts.givenUp.find(outcome);
  if (found === null) return { undone: 0, missed: 0 }; // not a late outcome of a call that landed
  const { call, index } = found;
  if (call.takenBack?.has(index)) return { undone: 0, missed: 0 }; // already taken back
  const link = await parts.connection.existingLink();
  if (link === null) return { undone: 0, missed: 1 };
  return parts.turns.turn(call.keys, async () => {
    const restore = restoreOf(parts, link, call, index);
    const undone = await setRestore(parts, link, restore);
    if (!undone) {
      parts.counters.undoMissed++;
      return { undone: 0, missed: 1 };
    }
    /** @type {Set<number>} */ (call.takenBack).add(index);
    let w = 0;
    for (let u = 0; u < call.keys.length; u++) if (call.wrote[u]) call.values[u] = restore.values[w++];
    restore.keys.forEach((key, k) => parts.cache.remember(key, restore.values[k]));
    parts.counters.undone++;
    return { undone: 1, missed: 0 };
  });
}

/**
 * What the call would have written without request `index` (and those taken back before), for each
 * key it wrote: the script's keys, arguments, and the values it leaves ("" for deleted).
 * @param {RedisStoreParts} parts
 * @param {RedisLink} link
 * @param {GivenUpCall} call
 * @param {number} index
 * @returns {{ keys: string[], args: Array<string | number>, values: string[] }}
 */
function restoreOf(parts, link, call, index) {
  const takenBack = /** @type {Set<number>} */ (call.takenBack);
  const left = call.requests.filter((_, r) => r !== index && !takenBack.has(r));
  const marginMs = Math.ceil(parts.connection.typicalRoundTripMs());
  // Replayed on the same views (a log included), with the same slots, even with no request left.
  const { next: without, folded } = parts.decider.decide(left, call.keys, call.basis, call.atMs, marginMs, call.requests[0]);
  /** @type {string[]} */
  const keys = [];
  /** @type {Array<string | number>} */
  const args = [call.atMs, Number.MAX_SAFE_INTEGER, link.caller, 0]; // a restore is not a decision: any time will do
  /** @type {string[]} */
  const values = [];
  for (let u = 0; u < call.keys.length; u++) {
    if (!call.wrote[u]) continue; // the call wrote nothing there
    const value = without[u] !== "" || folded[u] ? parts.tags.tagged(without[u], link.caller) : call.basis[u] === "" ? DELETE : call.basis[u];
    keys.push(call.keys[u]);
    values.push(value === DELETE ? "" : value);
    args.push(call.values[u], 0, "", value, call.expiresAtMs[u]); // the call's write dropped the log: none expected
  }
  return { keys, args, values };
}

/**
 * Sets the restore by compare-and-set against the call's write, waiting for a holder a few times.
 * @param {RedisStoreParts} parts
 * @param {RedisLink} link
 * @param {{ keys: string[], args: Array<string | number> }} restore
 * @returns {Promise<boolean>} whether it landed
 */
async function setRestore(parts, link, { keys, args }) {
  for (let attempt = 0; attempt < UNDO_ATTEMPTS; attempt++) {
    /** @type {unknown} */
    let reply;
    try {
      reply = await parts.connection.send(link, "cas", parts.names.scriptKeysOf(keys), args, undefined);
    } catch {
      return false;
    }
    const [applied, , heldMs] = parseReply(reply, keys.length);
    if (applied) return true;
    if (heldMs === 0) return false; // another isolate wrote over the call's write: the charge stays
    await parts.connection.waitForHolder(heldMs);
  }
  return false;
}
