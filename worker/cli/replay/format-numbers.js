// How the reports write numbers, windows and shares.

/** @param {number} n */
export function count(n) {
  return n.toLocaleString("en-US");
}

/** @param {number} share */
export function percent(share) {
  if (share === 0) return "0 %";
  if (share < 0.0001) return "<0.01 %";
  return `${(share * 100).toFixed(share < 0.1 ? 2 : 1)} %`;
}

/** @param {number} ms */
export function duration(ms) {
  for (const [unit, size] of /** @type {const} */ ([["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]])) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** One line naming a rule: "api: 120/60s sliding-counter, key user (enforce)". @param {any} rule */
export function ruleLine(rule) {
  const extras = [rule.burst > 0 ? `burst ${rule.burst}` : "", rule.cost > 1 ? `cost ${rule.cost}` : "", rule.countDenied ? "countDenied" : ""].filter(Boolean);
  return `${rule.name}: ${rule.limit}/${duration(rule.windowMs)} ${rule.algorithm}${extras.length ? ` (${extras.join(", ")})` : ""}, key ${rule.key.join("+")}, ${rule.mode}`;
}
