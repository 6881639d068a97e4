// What a response that is not counted leaves: everything the check before it found. The decision the
// request holds is the check's peek, and a peek (every store's, as limit() would decide) reports what a
// charge of the check's cost would leave: one less than what is left, for a cost of 1. Nothing was
// charged, so the headers and the log say what is left after the response, the same as before it.
//
// Why the cost is given back here rather than read again: a second call to the store (a round trip on
// the durable store) for a response that changes nothing; and the core admits no peek of cost 0.
// Exact for every algorithm: an admitted check's remaining is what is left less its cost (a whole
// number), never clamped (it is clamped only when the check does not fit).

/**
 * peekCosts is the cost each rule's check asked for before the handler, or null when a rule's cost is
 * a function (its value for this request is not kept: such a decision is left as the peek's).
 * With costFrom the check asks for 1 (options.js).
 * @param {{ entries: ReadonlyArray<{ cost: number | Function }> }} settings @param {boolean} costFrom
 * @returns {number[] | null}
 */
export function peekCosts(settings, costFrom) {
  if (costFrom) return settings.entries.map(() => 1);
  const costs = settings.entries.map((entry) => (typeof entry.cost === "number" ? entry.cost : null));
  return costs.includes(null) ? null : /** @type {number[]} */ (costs);
}

/**
 * unspent is `decision` (an admitted check's peek) as it stands after a response that was not charged:
 * each admitted check's remaining with its cost given back, the merged fields those of the check with
 * the least left. `decision` itself when `costs` is null, or nothing was admitted for real (a shadowed
 * denial).
 * @template {{ allowed: boolean, wouldDeny?: boolean, remaining: number, limit: number, resetMs: number, decidingCheck?: number, checks?: ReadonlyArray<any> }} D
 * @param {D} decision @param {number[] | null} costs
 * @returns {D}
 */
export function unspent(decision, costs) {
  if (costs === null || !decision.allowed || decision.wouldDeny === true || !Array.isArray(decision.checks)) return decision;
  let deciding = -1;
  /** @type {any[]} */
  const checks = decision.checks.map((check, i) => {
    if (check === null || !check.allowed) return check;
    return { ...check, remaining: check.remaining + costs[i] };
  });
  checks.forEach((check, i) => {
    if (check !== null && check.allowed && (deciding < 0 || check.remaining < checks[deciding].remaining)) deciding = i;
  });
  if (deciding < 0) return decision;
  const { limit, remaining, resetMs } = checks[deciding];
  return { ...decision, checks, decidingCheck: deciding, limit, remaining, resetMs };
}

/**
 * leftAfterRefusal is what a served response shows when its charge was refused because requests in
 * flight took the last units after its check: the refused charge's fields (what is left now, and when
 * the quota is back), as an admitted decision, since the response was served (no Retry-After), rather
 * than the check's peek, which counted units that are gone.
 * @template {{ allowed: boolean }} D
 * @param {D} refused
 * @returns {D}
 */
export function leftAfterRefusal(refused) {
  return { ...refused, allowed: true };
}
