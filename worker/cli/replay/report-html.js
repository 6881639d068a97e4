// The --html report: one self-contained page (inline CSS and SVG, no script, no request to anywhere:
// its Content-Security-Policy forbids every fetch), per rule: requests, would-deny count and share,
// clients limited, the clients limited most with their peak rates, the distribution of per-client
// peaks with the limit drawn on it, and denials over time. Every text from the log (keys, file names)
// is escaped: a log is hostile input.
import { count, duration, percent, ruleLine } from "./format-numbers.js";

const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; form-action 'none'; base-uri 'none'";

/** @param {unknown} text */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * htmlReport is the page of `result` (replay()'s summary, keys already redacted).
 * @param {any} result
 * @returns {string}
 */
export function htmlReport(result) {
  const { lines, requests, time } = result;
  const head = [
    `<p>${count(lines.replayed)} of ${count(lines.total)} lines replayed${time === null ? "" : `, ${escapeHtml(new Date(time.firstMs).toISOString())} to ${escapeHtml(new Date(time.lastMs).toISOString())}`}; ${count(lines.unparseable)} unparseable.</p>`,
    `<p>Requests checked: ${count(requests.checked)}; would have been refused: ${count(requests.blocked)} (${percent(requests.checked === 0 ? 0 : requests.blocked / requests.checked)}). Matched no route: ${count(requests.no_route)}; method refused: ${count(requests.method)}; path refused: ${count(requests.bad_path)}; deny list: ${count(requests.deny_list)}; allow list (rules skipped): ${count(requests.allow_list)}.</p>`,
    time !== null && time.outOfOrder > 0 ? `<p>${count(time.outOfOrder)} lines came earlier than one before them (longest step back ${duration(time.longestStepBackMs)}); they were replayed as they came.</p>` : "",
    lines.unparseable > 0 ? `<p>Unparseable lines: ${escapeHtml(result.badLines.join(", "))}${lines.unparseable > result.badLines.length ? ", ..." : ""}</p>` : "",
  ].join("\n");
  const sections = result.rules.map((/** @type {any} */ rule) => ruleSection(rule)).join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sluice replay</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:960px;padding:0 1em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-top:1px solid #ccc;padding-top:1em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}code{font-size:.95em}.figs{display:flex;gap:2em;flex-wrap:wrap}
.big{font-size:1.3em;font-weight:600}svg text{font:11px system-ui,sans-serif;fill:#444}
</style></head><body>
<h1>sluice replay</h1>
${head}
${sections}
</body></html>
`;
}

/** @param {any} s */
function ruleSection(s) {
  const rule = s.rule;
  const window = duration(rule.windowMs);
  const top = s.topClients.length === 0
    ? "<p>No client was limited.</p>"
    : `<table><tr><th>client</th><th>requests</th><th>limited</th><th>peak per ${escapeHtml(window)}</th><th>peak per second</th></tr>${s.topClients
        .map((/** @type {any} */ c) => `<tr><td><code>${escapeHtml(c.key)}</code></td><td>${count(c.requests)}</td><td>${count(c.limited)}</td><td>${count(c.peak)}</td><td>${c.peakPerSec.toFixed(2)}</td></tr>`)
        .join("")}</table>`;
  return `<section>
<h2>${escapeHtml(ruleLine(rule))}</h2>
<p>Routes: ${escapeHtml(rule.routes.join(", "))}</p>
<p><span class="big">${count(s.limited)}</span> of ${count(s.requests)} requests would have been denied (${percent(s.limitedShare)})${s.wouldDeny > 0 ? `, ${count(s.wouldDeny)} of them by the rule in shadow` : ""};
<span class="big">${count(s.clientsLimited)}</span> of ${count(s.clients)} clients limited (${percent(s.clientsLimitedShare)}).${s.clientRecordsRetired > 0 ? ` Client counts are approximate: ${count(s.clientRecordsRetired)} client records were retired to keep ${count(s.clientTableCapacity)}.` : ""}</p>
<div class="figs">
<figure>${peakChart(s.peakDistribution, rule.limit, window)}<figcaption>Clients (log scale) by their peak requests per ${escapeHtml(window)} (aligned windows); the line is the limit, ${count(rule.limit)}.</figcaption></figure>
<figure>${timeChart(s.overTime)}<figcaption>Requests (grey) and denials (red) per ${escapeHtml(duration(s.overTime.bucketMs))}.</figcaption></figure>
</div>
<h3>Clients limited most</h3>
${top}
${s.suggest === null ? "" : suggestTable(s.suggest, window)}
</section>`;
}

const W = 440;
const H = 200;
const PAD = 36;

/** @param {{ from: number, to: number, clients: number }[]} bins @param {number} limit @param {string} window */
function peakChart(bins, limit, window) {
  if (bins.length === 0) return `<svg width="${W}" height="${H}" role="img" aria-label="no clients"></svg>`;
  const lo = Math.log2(Math.min(bins[0].from, limit));
  const hi = Math.log2(Math.max(bins[bins.length - 1].to, limit * 1.2));
  const max = Math.max(...bins.map((b) => b.clients));
  const x = (/** @type {number} */ v) => PAD + ((Math.log2(v) - lo) / (hi - lo || 1)) * (W - 2 * PAD);
  // Clients on a log scale: the many quiet clients would otherwise flatten the few that matter.
  const y = (/** @type {number} */ v) => H - PAD - (Math.log1p(v) / Math.log1p(max)) * (H - 2 * PAD);
  const bars = bins.map((b) => `<rect x="${x(b.from).toFixed(1)}" y="${y(b.clients).toFixed(1)}" width="${Math.max(1, x(b.to) - x(b.from) - 1).toFixed(1)}" height="${(H - PAD - y(b.clients)).toFixed(1)}" fill="#4a7ab5"><title>${count(Math.ceil(b.from))}-${count(Math.ceil(b.to) - 1)} per ${escapeHtml(window)}: ${count(b.clients)} clients</title></rect>`).join("");
  const lx = x(limit + 0.5).toFixed(1);
  return `<svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="per-client peak distribution">
${bars}
<line x1="${lx}" x2="${lx}" y1="${PAD / 2}" y2="${H - PAD}" stroke="#c0392b" stroke-width="2"/><text x="${lx}" y="${PAD / 2 - 2}" text-anchor="middle">limit ${count(limit)}</text>
<line x1="${PAD}" x2="${W - PAD}" y1="${H - PAD}" y2="${H - PAD}" stroke="#888"/>
<text x="${PAD}" y="${H - PAD + 14}">${count(Math.ceil(2 ** lo))}</text><text x="${W - PAD}" y="${H - PAD + 14}" text-anchor="end">${count(Math.ceil(2 ** hi))}</text>
<text x="${PAD - 4}" y="${y(max) + 4}" text-anchor="end">${count(max)}</text>
</svg>`;
}

/** @param {{ bucketMs: number, buckets: { startMs: number, requests: number, limited: number }[] }} overTime */
function timeChart({ bucketMs, buckets }) {
  if (buckets.length === 0) return `<svg width="${W}" height="${H}" role="img" aria-label="no requests"></svg>`;
  const start = buckets[0].startMs;
  const span = buckets[buckets.length - 1].startMs + bucketMs - start;
  const max = Math.max(...buckets.map((b) => b.requests));
  const bw = ((W - 2 * PAD) * bucketMs) / span;
  const x = (/** @type {number} */ t) => PAD + ((t - start) / span) * (W - 2 * PAD);
  const y = (/** @type {number} */ v) => H - PAD - (v / max) * (H - 2 * PAD);
  const bars = buckets
    .map((b) => `<rect x="${x(b.startMs).toFixed(1)}" y="${y(b.requests).toFixed(1)}" width="${Math.max(0.5, bw).toFixed(2)}" height="${(H - PAD - y(b.requests)).toFixed(1)}" fill="#ccc"/>${b.limited > 0 ? `<rect x="${x(b.startMs).toFixed(1)}" y="${y(b.limited).toFixed(1)}" width="${Math.max(0.5, bw).toFixed(2)}" height="${(H - PAD - y(b.limited)).toFixed(1)}" fill="#c0392b"><title>${escapeHtml(new Date(b.startMs).toISOString())}: ${count(b.limited)} of ${count(b.requests)} denied</title></rect>` : ""}`)
    .join("");
  return `<svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="denials over time">
${bars}
<line x1="${PAD}" x2="${W - PAD}" y1="${H - PAD}" y2="${H - PAD}" stroke="#888"/>
<text x="${PAD}" y="${H - PAD + 14}">${escapeHtml(new Date(start).toISOString().slice(0, 16).replace("T", " "))}</text>
<text x="${W - PAD}" y="${H - PAD + 14}" text-anchor="end">${escapeHtml(new Date(start + span).toISOString().slice(0, 16).replace("T", " "))}</text>
<text x="${PAD - 4}" y="${y(max) + 4}" text-anchor="end">${count(max)}</text>
</svg>`;
}

/** @param {any} suggest @param {string} window */
function suggestTable(suggest, window) {
  const cell = (/** @type {any} */ s) => (s.limit === undefined ? "above every candidate" : `${count(s.limit)}${s.below === null ? "" : ` <small>(&gt; ${count(s.below)})</small>`}`);
  const rows = suggest.clients.map((/** @type {any} */ c, /** @type {number} */ i) => `<tr><td>${percent(c.target)}</td><td>${cell(c)}</td><td>${cell(suggest.requests[i])}</td></tr>`).join("");
  return `<h3>Suggested limits (per ${escapeHtml(window)})</h3>
<table><tr><th>at most limited</th><th>of clients: limit</th><th>of requests: limit</th></tr>${rows}</table>
<p>Each limit was replayed (the rule alone, at candidates 26 % apart); the threshold lies between the limit shown and the candidate below it.</p>`;
}
