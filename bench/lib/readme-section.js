// docs/bench.md shows the last full run as the bench printed it: results.md without its title, between
// two markers (results.md's "##" headings sit under the page's "# Benchmarks" as they are). A full run
// rewrites that section itself, so no figure in the docs is ever typed by hand.

const START = "<!-- bench results: written by `npm run bench`; do not edit -->";
const END = "<!-- end of bench results -->";

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
