// docs/redis.md's "Measured" table: figure 9's rows from a full run of bench/run.js (results.figures.redis),
// so the page never carries a figure typed by hand.
import { writeDocsSection } from "./docs-section.js";

const fixed = (x, digits) => (x === null || x === undefined ? "" : Number(x).toFixed(digits));
const rate = (s) => `${Math.round(s.median).toLocaleString("en")} (${Math.round(s.min).toLocaleString("en")}–${Math.round(s.max).toLocaleString("en")})`;

/** redisSection renders figure 9 as markdown, or null when the run did not measure it. */
export function redisSection(results) {
  const f = results.figures?.redis;
  if (!f?.measured) return null;
  const m = results.machine;
  const lines = [
    `Measured by \`node bench/run.js\` (figure 9; ${m.date.slice(0, 16).replace("T", " ")} UTC, load average ${m.loadAverageAtStart[0]} at the start on ${m.nproc} cores): decisions per second are medians over ${Object.values(f.rows)[0]?.decisionsPerSecond.n ?? "?"} interleaved repetitions with their range. ${f.note}.`,
    "",
    "| case | decisions/s (range) | round trips per decision | decisions per script call |",
    "|---|---|---|---|",
  ];
  for (const [name, row] of Object.entries(f.rows)) {
    lines.push(`| ${name} | ${rate(row.decisionsPerSecond)} | ${fixed(row.roundTripsPerDecision, 3)} | ${fixed(row.decisionsPerCall, 1)} |`);
  }
  const agree = Object.entries(f.admitted)
    .map(([algorithm, a]) => `${algorithm}: sluice ${a.sluice}, @upstash/ratelimit ${a.upstash}${a.expected === null ? " (approximate, shown)" : ` (exact: ${a.expected})`}`)
    .join("; ");
  lines.push("", `Admitted under one concurrent burst (${f.agreement.keys} keys × limit ${f.agreement.limit}, ${f.agreement.isolates} isolates, ${f.agreement.inFlight} in flight each): ${agree}.`);
  return lines.join("\n");
}

/** writeRedisSection rewrites docs/redis.md's section from a full run's results (nothing for a quick run). */
export function writeRedisSection(page, results) {
  const markdown = redisSection(results);
  if (markdown === null || results.quick) return false;
  writeDocsSection(page, "redis-figure", markdown, "run");
  return true;
}
