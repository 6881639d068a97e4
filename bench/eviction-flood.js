// node bench/eviction-flood.js [--quick]: what the eviction summary costs under a key flood.
//
// A rule's key table is added for `capacity` keys, and grows (doubling, then smaller steps, up to 16 times
// its slots, within the limiter's 28 MiB growth budget) when a new key would evict a key still owing quota; past that
// it folds evicted keys into the eviction summary. Targets exhaust their quota, then a flood of fresh keys,
// each spending its whole quota (the worst case for the summary: everything evicted still owes), sweeps
// the table for two windows, at 2x, 10x and 100x the table's capacity per window. Meanwhile innocent
// fresh keys send one request each. Measured, per algorithm and limit:
//   - extraTargetAdmissions: target requests admitted beyond exact counting (the guarantee: always 0);
//   - falseLimited: innocent first requests denied although exact counting admits any fresh key
//     (the summary's price: the newcomer's cells hold what evicted flood keys owed);
//   - evictionsRestricting, summaryStarts: the table-too-small signals of stats();
//   - slots and memoryBytes at the end: what growth cost.
// A second part runs the default table (50,000 keys) at 10x, limits 1, 2, 5 and 10.
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
const LIMITS = quick ? [1] : [1, 2, 5, 10];
const T0 = 1_700_000_040_000; // a window boundary

const wasm = readFileSync(resolve(root, "wasm-bindings/sluice.wasm"));

const DEFAULT_CAPACITY = 50_000;

async function run(algorithm, limit, flood, capacity = CAPACITY) {
  const core = await SluiceCore.fromBytes(wasm, { seed: new Uint32Array([11, 22, 33, 44]) });
  const rule = core.addRule({ algorithm, limit, windowMs: WINDOW_MS, keyCapacity: capacity });
  const first = core.stats(rule);
  for (let t = 0; t < TARGETS; t++) core.check(rule, `target-${t}`, limit, T0);
  const floodPerStep = Math.round((flood * capacity * STEP_MS) / WINDOW_MS);
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
    capacity,
    floodPerWindow: flood * capacity,
    extraTargetAdmissions,
    innocent,
    falseLimited,
    falseLimitedShare: falseLimited / innocent,
    evictions: stats.evictions,
    evictionsRestricting: stats.evictionsRestricting,
    summaryStarts: stats.summaryStarts,
    summaryBytes: stats.summaryBytes,
    tableBytes: stats.memoryBytes - stats.summaryBytes,
    firstSlots: first.slots,
    firstMemoryBytes: first.memoryBytes,
    slots: stats.slots,
    memoryBytes: stats.memoryBytes,
  };
}

function percent(share) {
  return `${(100 * share).toFixed(share > 0 && share < 0.001 ? 3 : 1)} %`;
}

const kib = (bytes) => `${Math.round(bytes / 1024).toLocaleString("en")} KiB`;

function table(results) {
  const lines = [
    "| algorithm | limit | flood keys per window (each spends its whole quota) | extra admissions of exhausted targets | innocent new keys limited (false limiting) | evictions of still-restricting keys | requests started from the summary | memory at the end (at the start) |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const r of results) {
    lines.push(
      `| ${r.algorithm} | ${r.limit} | ${r.floodPerWindow.toLocaleString("en")} (${r.floodPerWindow / r.capacity}x the table) | ${r.extraTargetAdmissions} | ${percent(r.falseLimitedShare)} (${r.falseLimited} of ${r.innocent}) | ${r.evictionsRestricting.toLocaleString("en")} | ${r.summaryStarts.toLocaleString("en")} | ${kib(r.memoryBytes)} (${kib(r.firstMemoryBytes)}) |`,
    );
  }
  return lines;
}

function markdown(results, defaults) {
  return [
    `Measured by \`node bench/eviction-flood.js\` (deterministic; a table added for ${CAPACITY.toLocaleString("en")} keys, windows of 60 s, ${TARGETS} exhausted targets retried every second, ${INNOCENT_PER_STEP} new innocent keys a second, two windows). Memory is the table's and its summary's (\`stats().memoryBytes\`), grown under the flood.`,
    "",
    ...table(results),
    "",
    `The default table (${DEFAULT_CAPACITY.toLocaleString("en")} keys) under a flood of 10x:`,
    "",
    ...table(defaults),
  ].join("\n");
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
const defaults = [];
if (!quick) {
  for (const limit of [1, 2, 5, 10]) {
    for (const algorithm of ALGORITHMS) {
      const r = await run(algorithm, limit, 10, DEFAULT_CAPACITY);
      defaults.push(r);
      console.log(`${algorithm} limit ${limit} flood 10x the default table: extra ${r.extraTargetAdmissions}, false limited ${percent(r.falseLimitedShare)}, ${kib(r.memoryBytes)}`);
    }
  }
}
if ([...results, ...defaults].some((r) => r.extraTargetAdmissions !== 0)) {
  console.error("an exhausted target was admitted beyond exact counting");
  process.exitCode = 1;
}
if (!quick) {
  writeFileSync(resolve(root, "bench/eviction-flood.json"), `${JSON.stringify({ capacity: CAPACITY, windowMs: WINDOW_MS, results, defaults }, null, 2)}\n`);
  writeDocsSection(resolve(root, "docs/core.md"), "eviction-flood", markdown(results, defaults));
}
