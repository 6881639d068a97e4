// node bench/eviction-flood.js [--quick]: what the eviction summary costs under a key flood.
//
// A rule's key table holds `capacity` keys. Targets exhaust their quota, then a flood of fresh keys,
// each spending its whole quota (the worst case for the summary: everything evicted still owes), sweeps
// the table for two windows, at 2x, 10x and 100x the table's capacity per window. Meanwhile innocent
// fresh keys send one request each. Measured, per algorithm and limit:
//   - extraTargetAdmissions: target requests admitted beyond exact counting (the guarantee: always 0);
//   - falseLimited: innocent first requests denied although exact counting admits any fresh key
//     (the summary's price: the newcomer's cells hold what evicted flood keys owed);
//   - evictionsRestricting, summaryStarts: the table-too-small signals of stats().
// Writes bench/eviction-flood.json and the section of docs/core.md between its markers.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

import { SluiceCore } from "../wasm-bindings/sluice.js";
import { writeDocsSection } from "./lib/docs-section.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const quick = process.argv.includes("--quick");
const ALGORITHMS = ["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "leaky-bucket", "gcra"];
const CAPACITY = 1000;
const WINDOW_MS = 60_000;
const STEP_MS = 1000;
const TARGETS = 50;
const INNOCENT_PER_STEP = 10;
const FLOODS = quick ? [10] : [2, 10, 100]; // flood keys per window, in table capacities
const LIMITS = quick ? [1] : [1, 10];
const T0 = 1_700_000_040_000; // a window boundary

const wasm = readFileSync(resolve(root, "wasm-bindings/sluice.wasm"));

async function run(algorithm, limit, flood) {
  const core = await SluiceCore.fromBytes(wasm, { seed: new Uint32Array([11, 22, 33, 44]) });
  const rule = core.addRule({ algorithm, limit, windowMs: WINDOW_MS, keyCapacity: CAPACITY });
  for (let t = 0; t < TARGETS; t++) core.check(rule, `target-${t}`, limit, T0);
  const floodPerStep = Math.round((flood * CAPACITY * STEP_MS) / WINDOW_MS);
  let floodKey = 0;
  let innocentKey = 0;
  let extraTargetAdmissions = 0;
  let innocent = 0;
  let falseLimited = 0;
  // Two windows, less a step: the targets' own quota never comes back inside them for windows (their
  // window is the first one; the second starts fresh, so targets are only checked in the first).
  const steps = (2 * WINDOW_MS) / STEP_MS;
  for (let step = 0; step < steps; step++) {
    const now = T0 + step * STEP_MS;
    for (let i = 0; i < floodPerStep; i++) core.check(rule, `flood-${floodKey++}`, limit, now);
    for (let i = 0; i < INNOCENT_PER_STEP; i++) {
      innocent++;
      if (!core.check(rule, `innocent-${innocentKey++}`, 1, now).allowed) falseLimited++;
    }
    // Exact counting gives an exhausted target nothing more before its quota returns: for the windows
    // until the window ends, for the buckets until one token has dripped back (window / limit).
    const quotaBack = algorithm.endsWith("window") || algorithm === "sliding-log" || algorithm === "sliding-counter" ? WINDOW_MS : WINDOW_MS / limit;
    if (now - T0 < quotaBack - STEP_MS) {
      for (let t = 0; t < TARGETS; t++) if (core.check(rule, `target-${t}`, 1, now).allowed) extraTargetAdmissions++;
    }
  }
  const stats = core.stats(rule);
  return {
    algorithm,
    limit,
    floodPerWindow: flood * CAPACITY,
    extraTargetAdmissions,
    innocent,
    falseLimited,
    falseLimitedShare: falseLimited / innocent,
    evictions: stats.evictions,
    evictionsRestricting: stats.evictionsRestricting,
    summaryStarts: stats.summaryStarts,
    summaryBytes: stats.summaryBytes,
    tableBytes: stats.memoryBytes - stats.summaryBytes,
  };
}

function percent(share) {
  return `${(100 * share).toFixed(share > 0 && share < 0.001 ? 3 : 1)} %`;
}

function markdown(results) {
  const lines = [
    `Measured by \`node bench/eviction-flood.js\` (deterministic; a table of ${CAPACITY.toLocaleString("en")} keys, windows of 60 s, ${TARGETS} exhausted targets retried every second, ${INNOCENT_PER_STEP} new innocent keys a second, two windows). The summary of this table takes ${results[0].summaryBytes.toLocaleString("en")} bytes beside the table's ${results[0].tableBytes.toLocaleString("en")} (fixed window).`,
    "",
    "| algorithm | limit | flood keys per window (each spends its whole quota) | extra admissions of exhausted targets | innocent new keys limited (false limiting) | evictions of still-restricting keys | requests started from the summary |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const r of results) {
    lines.push(
      `| ${r.algorithm} | ${r.limit} | ${r.floodPerWindow.toLocaleString("en")} (${r.floodPerWindow / CAPACITY}x the table) | ${r.extraTargetAdmissions} | ${percent(r.falseLimitedShare)} (${r.falseLimited} of ${r.innocent}) | ${r.evictionsRestricting.toLocaleString("en")} | ${r.summaryStarts.toLocaleString("en")} |`,
    );
  }
  return lines.join("\n");
}

const results = [];
for (const flood of FLOODS) {
  for (const limit of LIMITS) {
    for (const algorithm of ALGORITHMS) {
      const r = await run(algorithm, limit, flood);
      results.push(r);
      console.log(`${algorithm} limit ${limit} flood ${flood}x: extra ${r.extraTargetAdmissions}, false limited ${percent(r.falseLimitedShare)}`);
    }
  }
}
if (results.some((r) => r.extraTargetAdmissions !== 0)) {
  console.error("an exhausted target was admitted beyond exact counting");
  process.exitCode = 1;
}
if (!quick) {
  writeFileSync(resolve(root, "bench/eviction-flood.json"), `${JSON.stringify({ capacity: CAPACITY, windowMs: WINDOW_MS, results }, null, 2)}\n`);
  writeDocsSection(resolve(root, "docs/core.md"), "eviction-flood", markdown(results));
}
