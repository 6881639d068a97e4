// README.md shows the last full run as the bench printed it: results.md, its title dropped and its
// headings one level down, between two markers. A full run rewrites that section itself, so no figure
// in the README is ever typed by hand.

const START = "<!-- bench results: written by `npm run bench`; do not edit -->";
const END = "<!-- end of bench results -->";

/** withBenchResults returns `readme` with the section between the markers replaced by `resultsMarkdown`. */
export function withBenchResults(readme, resultsMarkdown) {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md lacks the bench markers ${START} ... ${END}`);
  const body = resultsMarkdown
    .replace(/^# .*\n+/, "")
    .replace(/^(#{2,5}) /gm, "#$1 ")
    .trimEnd();
  return `${readme.slice(0, start)}${START}\n\n${body}\n\n${readme.slice(end)}`;
}
