// Renders bench/planet-leases.json as the "On a planet" section of docs/leases.md, between its two
// markers, so that the figures in the doc are the bench's output, never typed by hand.
const BEGIN = "<!-- bench/planet-leases.js: begin (generated, do not edit) -->";
const END = "<!-- bench/planet-leases.js: end -->";

const pct = (share) => (share === undefined ? "—" : `${(100 * share).toFixed(2)} %`);
const ms = (value) => (value === undefined || value === null ? "—" : `${value}`);
const perRegion = (run, pick) => Object.values(run.perRegion).map(pick).join(" / ");
const worst = (run, pick) => Math.max(...Object.values(run.perRegion).map(pick));

// The issue's floors for warm keys (≥ 99 % decided without waiting, store wait p99 ≤ 5 ms), per run.
function warmVerdict(run) {
  if (run.store === "bench-durable" || run.store === "bench-regional") return "";
  const waited = worst(run, (f) => f.waitedShareAfterWarmUp);
  const p99 = run.perRegion.home.storeWaitP99Ms === undefined ? undefined : worst(run, (f) => f.storeWaitP99Ms);
  const waits = waited <= 0.01 ? "met" : "**not met**";
  const latency = p99 === undefined ? "" : p99 <= 5 ? ", p99 met" : ", p99 **not met**";
  return `≤ 1 % waited ${waits}${latency}`;
}

// When a run was made (HH:MM UTC): its own date, or the full run's.
const when = (run, report) => `${(run.date ?? report.date).slice(11, 16)}Z`;
// Rows in a fixed order: without leases, with leases, through the regional tier.
const rank = (run) => (run.store.startsWith("bench-durable") ? 0 : run.store.startsWith("bench-regional") ? 2 : 1);
const inOrder = (runs) => runs.map((run, i) => [run, i]).sort((x, y) => rank(x[0]) - rank(y[0]) || x[1] - y[1]).map(([run]) => run);

function warmRow(run, report) {
  const what = run.store === "bench-durable" ? "durable, no lease" : run.store === "bench-regional" ? "regional tier" : "lease";
  return `| ${what}, ${run.algorithm ?? "sliding-counter"} (${when(run, report)}) | ${perRegion(run, (f) => pct(f.waitedShareAfterWarmUp))} | ${perRegion(run, (f) => ms(f.storeWaitP99Ms))} | ${perRegion(run, (f) => ms(f.p99Ms))} | ${perRegion(run, (f) => f.leasesAhead ?? "—")} | ${warmVerdict(run)} |`;
}

function hotRow(run, report) {
  const share = run.admitted / run.limit;
  const verdict = run.admitted <= run.limit && share >= 0.95 ? "met" : "**not met**";
  return `| ${run.store} (${when(run, report)}) | ${run.admitted} of ${run.limit} (asked ${run.asked}) | ${perRegion(run, (f) => pct(f.waitedShare))} | ${perRegion(run, (f) => ms(f.storeWaitP99Ms))} | ${perRegion(run, (f) => f.roundTripsPer1000)} | ${verdict} |`;
}

function section(report) {
  const dates = Object.entries(report)
    .filter(([key]) => key === "date" || key.endsWith("Date"))
    .map(([key, value]) => `${key === "date" ? "full run" : `--only=${key.slice(0, -4)}`} ${value}`)
    .join("; ");
  const cpu = report.localDecisionCpu;
  const lines = [
    BEGIN,
    "",
    `Runs (each row says when, UTC): ${dates}. Regions (round trip to the home ±20 %): ${report.regions.map((r) => `${r.name} ${r.rttMs} ms`).join(", ")}.`,
    "Per region in that order. *Waited*: share of decisions that waited on a round trip, after each key's warm-up",
    "(its first 2 decisions). *Store wait p99*: on the geography seam's clock (a decision taken from a lease awaits",
    "no call: 0 ms; one that waited is counted at its region's longest round trip). *Wall p99*: the isolate's clock,",
    "waiting for a CPU on this shared host included. *Lent ahead*: leases lent from a key's next window.",
    "",
    "Warm keys: 20 keys per isolate at 1 request a second each, 75 s across a minute's window start.",
    "",
    "| run | waited (after warm-up) | store wait p99, ms | wall p99, ms | lent ahead | floors |",
    "|---|---|---|---|---|---|",
    ...inOrder(report.warm).map((run) => warmRow(run, report)),
    "",
    "Hot keys (one window: the object's clock stands still), asked for 1.6 times their limit from all regions.",
    "",
    "| run | admitted | waited | store wait p99, ms | round trips per 1,000 | ≥ 95 %, never over |",
    "|---|---|---|---|---|---|",
    ...inOrder(report.hot).map((run) => hotRow(run, report)),
    "",
    cpu === undefined
      ? "On-CPU cost of a decision from a lease: not measured in this JSON."
      : `On-CPU cost of a decision taken from a lease, through the fallback chain (\`bench/local-decision-cpu.js\`, Node, process.cpuUsage, ${cpu.repetitions} × ${cpu.decisions / cpu.repetitions} decisions): median ${cpu.cpuUsPerDecision.median} µs (min ${cpu.cpuUsPerDecision.min}, max ${cpu.cpuUsPerDecision.max}); ${pct(cpu.fromLeaseShare)} of them from a lease.`,
    "",
    END,
  ];
  return lines.join("\n");
}

/**
 * renderLeasesSection returns `doc` with the text between the markers replaced by the report's section.
 * @param {string} doc
 * @param {any} report bench/planet-leases.json
 */
export function renderLeasesSection(doc, report) {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/leases.md has no ${BEGIN} ... ${END} markers`);
  return doc.slice(0, start) + section(report) + doc.slice(end + END.length);
}
