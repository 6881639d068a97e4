// docs/bench.md shows the last full run as the bench printed it: results.md without its title, between
// two markers (results.md's "##" headings sit under the page's "# Benchmarks" as they are). README.md
// shows the floors' verdicts of the same run, between markers of its own. A full run rewrites both
// sections itself, so no figure in the docs is ever typed by hand.

const START = "<!-- bench results: written by `npm run bench`; do not edit -->";
const END = "<!-- end of bench results -->";
const SUMMARY_START = "<!-- bench summary: written by `npm run bench`; do not edit -->";
const SUMMARY_END = "<!-- end of bench summary -->";

/** README is the page whose summary section a full run rewrites. */
export const README = "README.md";

/**
 * withBenchSummary returns the README `page` with its summary section replaced by the run's floors
 * (results.floors, from evaluateFloors): when and where it ran, and each floor's verdict and figures.
 */
export function withBenchSummary(page, results) {
  const start = page.indexOf(SUMMARY_START);
  const end = page.indexOf(SUMMARY_END);
  if (start < 0 || end < start) throw new Error(`${README} lacks the bench summary markers ${SUMMARY_START} ... ${SUMMARY_END}`);
  const { machine } = results;
  const lines = [
    `Full \`npm run bench\` of ${machine.date.slice(0, 10)} (${machine.date.slice(11, 16)} UTC) on ${machine.nproc} x ${machine.cpuModel}, ` +
      `workerd ${machine.versions.workerd}, load ${machine.loadAverageAtStart[0]} at the start; every figure with its spread in [docs/bench.md](docs/bench.md).`,
    "",
    "| floor | met | measured |",
    "|---|---|---|",
    ...results.floors.map((f) => `| ${f.floor} | ${f.met === null ? "pending" : f.met ? "yes" : "**no**"} | ${f.detail} |`),
  ];
  return `${page.slice(0, start)}${SUMMARY_START}\n\n${lines.join("\n")}\n\n${page.slice(end)}`;
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
