// A key's demand: how often it is asked for, and how many units to set aside for it. Leases
// (leases.js: an isolate borrowing from the Durable Object) and reservations (durable-object.js: the
// object charging its storage ahead of its memory) size their batches the same way: the key's
// recent rate times a period, and nothing for a key seen fewer than WARM_REQUESTS times per period.

/** A key takes nothing set aside before this many requests within one period. */
export const WARM_REQUESTS = 2;

/**
 * The fields a caller's per-key entry carries (it may carry others).
 * @typedef {{ seen: number, since: number, lastRate: number }} Demand
 */

/** @param {number} nowMs @returns {Demand} */
export function freshDemand(nowMs) {
  return { seen: 0, since: nowMs, lastRate: 0 };
}

/**
 * noteRequest counts `count` requests of the key (one by default; a regional object counts the units
 * it passes on to isolates); the rate of the last full period is kept as requests per ms.
 * @param {Demand} demand @param {number} nowMs @param {number} periodMs @param {number} [count]
 */
export function noteRequest(demand, nowMs, periodMs, count = 1) {
  if (nowMs - demand.since >= periodMs) {
    demand.lastRate = demand.seen / (nowMs - demand.since);
    demand.seen = 0;
    demand.since = nowMs;
  }
  demand.seen += count;
}

/**
 * unitsWanted is how many units to set aside: the key's rate times the period, at most maxUnits;
 * 0 for a cold key.
 * @param {Demand} demand @param {number} nowMs @param {number} periodMs @param {number} maxUnits
 * @returns {number}
 */
export function unitsWanted(demand, nowMs, periodMs, maxUnits) {
  if (demand.seen + demand.lastRate * periodMs < WARM_REQUESTS) return 0;
  const elapsed = Math.max(nowMs - demand.since, periodMs / 8);
  const rate = Math.max(demand.lastRate, demand.seen / elapsed);
  return Math.min(maxUnits, Math.ceil(rate * periodMs));
}
