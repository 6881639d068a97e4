// The planet figure (bench/planet-figure.json, written by bench/planet-figure.js) rendered into the
// docs: README's planet rows, under its exactness table, and docs/stores.md's planet section, each
// between two markers the renderer owns. Nothing here measures; test/js/planet-figure-render.test.js
// checks that the committed pages hold exactly what the committed JSON renders to.

/** The pages the figure is rendered into, relative to the repository root. */
export const PLANET_PAGES = Object.freeze(["README.md", "docs/stores.md"]);

const START = "<!-- planet figure: written by bench/planet-figure.js; do not edit -->";
const END = "<!-- end of planet figure -->";

const LABELS = {
  durable: '`store: "durable"`',
  "durable + lease": '`store: "durable", lease: true`',
  regional: '`store: "durable", lease: { locationHint }`',
  redis: '`store: "redis"`',
  "redis + lease": '`store: "redis", lease: true`',
};

const percent = (share) => `${(100 * share).toFixed(share > 0 && share < 0.01 ? 1 : 0)} %`;
const perRegion = (store, value) => store.regions.map(value).join(" / ");
const sum = (store, value) => store.regions.reduce((n, r) => n + value(r), 0);
const admittedRange = (s) => (s.minAdmittedPerKey === s.maxAdmittedPerKey ? `${s.maxAdmittedPerKey}` : `${s.minAdmittedPerKey}–${s.maxAdmittedPerKey}`);

// A median with its range over the repetitions: "16 (12–30)".
function withRange(value, spread) {
  if (value === null || value === undefined) return "–";
  if (spread === undefined || spread === null || spread[0] === spread[1]) return `${value}`;
  return `${value} (${spread[0]}–${spread[1]})`;
}

function runLine(figure) {
  const w = figure.workload;
  const rtts = figure.regions.map((r) => r.rttMs).join(", ");
  return (
    `${figure.regions.length} isolates ${rtts} ms from the keys' home (± ${100 * figure.jitter} % per call, the geography seam of \`sluice/testing\`), ` +
    `each store with its default options; ${w.keys} keys, each asked by every isolate twice a second for ${(w.ticks * w.gapMs) / 1000} s ` +
    `(${w.ticks * figure.regions.length} asked per key for a limit of ${w.limit} per hour, ${w.algorithm}), ` +
    `${figure.repetitions} repetitions interleaved over the stores, each with keys of its own; ` +
    `measured ${figure.date.slice(0, 16).replace("T", " ")} UTC on ${figure.machine.nproc} shared cores at load ${figure.machine.loadBefore[0]}`
  );
}

/** readmeSection is README's planet rows: one per store, every region in each cell (2 → 250 ms). */
export function readmeSection(figure) {
  const rtts = figure.regions.map((r) => r.rttMs).join("/");
  const rows = figure.stores.map(
    (s) =>
      `| ${LABELS[s.store]} | ${admittedRange(s)} of ${s.limit} | **${s.overAdmitted}** | ${sum(s, (r) => r.fallbacks)} | ${perRegion(s, (r) => percent(r.waitedShare))} | ${perRegion(s, (r) => r.p99Ms)} | ${perRegion(s, (r) => r.hostLagP99Ms)} | ${perRegion(s, (r) => Math.round(r.crossPlanetPer1000))} |`,
  );
  return [
    `On a planet (\`node bench/planet-figure.js\`: ${runLine(figure)}; admissions over every repetition, the rest medians per region, ${rtts} ms):`,
    "",
    `| mode | admitted per key | over the limit | denied by failMode (the store did not answer in time, or its breaker was open) | decisions that waited on a round trip | p99 added latency, ms | the host's own wait, p99 ms | round trips across the planet per 1,000 decisions |`,
    "|---|---|---|---|---|---|---|---|",
    ...rows,
    "",
    "The added latency is the isolate's clock from request to decision, so it includes this shared host's own wait, measured beside it as how late each isolate's timers fired; [Stores](docs/stores.md#the-planet-figure) has every region's p50 and p99, for the decisions that waited and those that did not.",
  ].join("\n");
}

/** storesSection is docs/stores.md's planet section: every store, every region, every measure. */
export function storesSection(figure) {
  const lines = [`Measured by \`node bench/planet-figure.js\` (\`bench/planet-figure.json\`): ${runLine(figure)}.`, ""];
  for (const s of figure.stores) {
    const denied = sum(s, (r) => r.fallbacks);
    lines.push(`- ${LABELS[s.store]}: ${admittedRange(s)} admitted per key for a limit of ${s.limit} (${s.askedPerKey} asked), **${s.overAdmitted} over**; ${denied} decision${denied === 1 ? "" : "s"} denied by failMode "closed" (the store did not answer within its learnt timeout, or its breaker was open)${s.workerdCpuUsPerDecision == null ? "" : `; workerd's on-CPU time, every isolate and object together, ${withRange(s.workerdCpuUsPerDecision, s.workerdCpuUsRange)} µs per decision`}.`);
  }
  lines.push(
    "",
    "| store | region (round trip) | decisions | waited on a round trip | p50 / p99 ms, all | p50 / p99 ms, those that waited | p50 / p99 ms, those that did not | the host's timer lag, p50 / p99 ms | round trips per 1,000 | of them across the planet |",
    "|---|---|---|---|---|---|---|---|---|---|",
  );
  for (const s of figure.stores) {
    for (const r of s.regions) {
      const spread = r.spread ?? {};
      const pair = (p50, p99, field) => (p50 === null ? "–" : `${p50} / ${withRange(p99, spread[field])}`);
      const share = spread.waitedShare ? ` (${percent(spread.waitedShare[0])}–${percent(spread.waitedShare[1])})` : "";
      lines.push(
        `| ${LABELS[s.store]} | ${r.region} (${r.rttMs} ms) | ${r.decisions} | ${percent(r.waitedShare)}${share} | ${pair(r.p50Ms, r.p99Ms, "p99Ms")} | ${pair(r.waitedP50Ms, r.waitedP99Ms, "waitedP99Ms")} | ${pair(r.localP50Ms, r.localP99Ms, "localP99Ms")} | ${pair(r.hostLagP50Ms, r.hostLagP99Ms, "hostLagP99Ms")} | ${withRange(r.roundTripsPer1000, spread.roundTripsPer1000)} | ${withRange(r.crossPlanetPer1000, spread.crossPlanetPer1000)} |`,
      );
    }
  }
  lines.push(
    "",
    "Each cell is the median over the repetitions, its range in parentheses (a p99's range beside the p99); decisions are summed over them. A decision that waited paid one simulated round trip of its region (± 20 %) plus the host's wait; one that did not (a lease, or the isolate's memory of a denial) paid the host's wait only: CPU and scheduling on this shared machine, not sluice's. The timer lag is that wait measured on its own: how late each isolate's 500 ms timer between rounds fired. Round trips per 1,000 count every call an isolate made (for the regional tier, to its regional object 10 ms away); those across the planet are the calls that reached the keys' home (the regional object's own, for the regional tier).",
  );
  return lines.join("\n");
}

/** withSection returns `page` with the text between the planet markers replaced by `body`. */
export function withSection(page, body, pageName) {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${pageName} lacks the markers ${START} ... ${END}`);
  return `${page.slice(0, start)}${START}\n\n${body}\n\n${page.slice(end)}`;
}

/**
 * renderPages returns each of PLANET_PAGES rendered from `figure`, given `read(path)` for the page as it is.
 * @param {any} figure @param {(path: string) => string} read
 * @returns {Record<string, string>}
 */
export function renderPages(figure, read) {
  return {
    "README.md": withSection(read("README.md"), readmeSection(figure), "README.md"),
    "docs/stores.md": withSection(read("docs/stores.md"), storesSection(figure), "docs/stores.md"),
  };
}
