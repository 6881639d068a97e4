// docs/bench.md shows the last full run as the bench printed it: results.md without its title, between
// two markers (results.md's "##" headings sit under the page's "# Benchmarks" as they are). README.md
// says in three sentences what the same run measured and how many floors it met, between markers of
// its own. A full run rewrites both
// sections itself, so no figure in the docs is ever typed by hand.

const START = "<!-- bench results: written by `npm run bench`; do not edit -->";
const END = "<!-- end of bench results -->";
const SUMMARY_START = "<!-- bench summary: written by `npm run bench`; do not edit -->";
const SUMMARY_END = "<!-- end of bench summary -->";

/** README is the page whose summary section a full run rewrites. */
export const README = "README.md";

/**
 * benchSummary is README's three sentences on a run: what was measured against which peers, how many
 * of the floors its issues set were met (and which were not), and where every figure is. README is the
 * door: the floors table, with its figures and spreads, lives in docs/bench.md.
 * @param {any} results
 * @returns {string}
 */
export function benchSummary(results) {
  const { machine } = results;
  const peers = Object.values(results.subjects)
    .filter((subject) => subject.family === "peer")
    .map((subject) => subject.label.split(" ")[0]);
  const floors = results.floors.filter((floor) => floor.met !== null);
  const missed = floors.filter((floor) => !floor.met).map((floor) => floor.floor);
  return [
    `The bench runs sluice and its peers (${[...new Set(peers)].join(", ")}, and a plain-JS counter) inside workerd, ` +
      `for the hot key, a million keys, the Hono middleware, the Durable Object and leases.`,
    `Its full run of ${machine.date.slice(0, 10)} on ${machine.nproc} x ${machine.cpuModel} met ${floors.length - missed.length} of the ${floors.length} ` +
      `floors its issues set${missed.length === 0 ? "" : `; not met: ${missed.join("; ")}`}.`,
    "Every figure, floor and spread is in [docs/bench.md](docs/bench.md).",
  ].join(" ");
}

/**
 * withBenchSummary returns the README `page` with its summary section replaced by benchSummary(results).
 */
export function withBenchSummary(page, results) {
  const start = page.indexOf(SUMMARY_START);
  const end = page.indexOf(SUMMARY_END);
  if (start < 0 || end < start) throw new Error(`${README} lacks the bench summary markers ${SUMMARY_START} ... ${SUMMARY_END}`);
  return `${page.slice(0, start)}${SUMMARY_START}\n\n${benchSummary(results)}\n\n${page.slice(end)}`;
}

/** BENCH_PAGE is the docs page, relative to the repository root, whose marked section a full run rewrites. */
export const BENCH_PAGE = "docs/bench.md";

/** withBenchResults returns `page` with the section between the markers replaced by `resultsMarkdown`. */
export function withBenchResults(page, resultsMarkdown) {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${BENCH_PAGE} lacks the bench markers ${START} ... ${END}`);
  const body = resultsMarkdown.replace(/^# .*\n+/, "").trimEnd();
  return `${page.slice(0, start)}${START}\n\n${body}\n\n${page.slice(end)}`;
}
