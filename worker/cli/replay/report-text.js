// The terminal summary.
import { count, duration, percent, ruleLine } from "./format-numbers.js";

/**
 * textReport writes the summary `result` of replay() as lines of text.
 * @param {any} result
 * @param {{ top: number }} options
 * @returns {string}
 */
export function textReport(result, { top }) {
  const out = [];
  const { lines, requests, time } = result;
  out.push(`replayed ${count(lines.replayed)} of ${count(lines.total)} lines (${Object.entries(result.formats).map(([source, format]) => `${source}: ${format}`).join(", ") || "no input"})`);
  if (time !== null) {
    out.push(`from ${new Date(time.firstMs).toISOString()} to ${new Date(time.lastMs).toISOString()}`);
    if (time.outOfOrder > 0) out.push(`${count(time.outOfOrder)} lines earlier than one before them (longest step back ${duration(time.longestStepBackMs)}): replayed as they came`);
  }
  if (lines.unparseable > 0) {
    const listed = result.badLines.join(", ");
    out.push(`${count(lines.unparseable)} unparseable lines, skipped: ${listed}${lines.unparseable > result.badLines.length ? ", ..." : ""}`);
  }
  const refused = [
    requests.no_route > 0 ? `${count(requests.no_route)} ${result.engine === "rules" ? "matched no rule's prefix and methods" : "matched no route"}` : "",
    requests.method > 0 ? `${count(requests.method)} used a method the route refuses` : "",
    requests.bad_path > 0 ? `${count(requests.bad_path)} had a path the gateway refuses` : "",
    requests.deny_list > 0 ? `${count(requests.deny_list)} were on the deny list (403)` : "",
    requests.allow_list > 0 ? `${count(requests.allow_list)} were on the allow list (rules skipped)` : "",
  ].filter(Boolean);
  if (refused.length > 0) out.push(`not checked by any rule: ${refused.join(", ")}`);
  out.push(`requests checked: ${count(requests.checked)}; would have been refused (429): ${count(requests.blocked)} (${percent(requests.checked === 0 ? 0 : requests.blocked / requests.checked)})`);
  if (result.lockoutRulesNotReplayed > 0) out.push(`${result.lockoutRulesNotReplayed} lockout rule(s) not replayed (they need each login's outcome)`);
  for (const rule of result.rules) {
    out.push("");
    out.push(ruleLine(rule.rule));
    out.push(`  requests ${count(rule.requests)}, would deny ${count(rule.limited)} (${percent(rule.limitedShare)})${rule.wouldDeny > 0 && rule.denied > 0 ? ` [${count(rule.denied)} enforced, ${count(rule.wouldDeny)} shadow]` : ""}${rule.unchecked > 0 ? `, unchecked ${count(rule.unchecked)}` : ""}`);
    out.push(`  clients ${count(rule.clients)}, limited ${count(rule.clientsLimited)} (${percent(rule.clientsLimitedShare)})${rule.clientRecordsRetired > 0 ? ` (approximate: ${count(rule.clientRecordsRetired)} client records retired at ${count(rule.clientTableCapacity)} held)` : ""}`);
    for (const client of rule.topClients.slice(0, top)) {
      out.push(`    ${client.key}: ${count(client.limited)} of ${count(client.requests)} limited, peak ${count(client.peak)} per ${duration(rule.rule.windowMs)}`);
    }
    if (rule.suggest !== null) {
      const pick = (/** @type {any} */ s) => (s.limit === undefined ? "above every candidate" : `${count(s.limit)}${s.below === null ? "" : ` (between ${count(s.below)} and ${count(s.limit)})`}`);
      out.push(`  suggest (per ${duration(rule.rule.windowMs)}, ${rule.rule.algorithm}; the rule alone, charged with every request it checked):`);
      for (let i = 0; i < rule.suggest.clients.length; i++) {
        const c = rule.suggest.clients[i];
        const r = rule.suggest.requests[i];
        out.push(`    ${percent(c.target).padStart(7)} limited: clients at ${pick(c)}; requests at ${pick(r)}`);
      }
      if (rule.suggest.skippedLimits.length > 0) out.push(`    candidates skipped (tables too big for the core): ${rule.suggest.skippedLimits.join(", ")}`);
    }
  }
  return `${out.join("\n")}\n`;
}
