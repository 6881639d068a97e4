// node bench/replay.js [--quick]: how fast `sluice replay` goes, and in how much memory (issue 21 §1).
//
// Throughput: one generated Logpush file (realistic lines: test/js/fixtures/replay/traffic.js), read
// in each repetition four times, in rotating order: read only (the reader: lines found as byte ranges),
// parse only (the same reader and parser end to end uses: each batch read by the core's Logpush reader,
// formats/logpush-batch.js, a record per line, no decision), JSON.parse per line (the parser before it:
// each line a string given to parseLogpushLine; a second baseline, no floor) and end to end (replay()
// with an --rule engine: parse, canonical path, key, the core's decision, the per-rule statistics). Speeds are lines per second of this process's CPU time (process.cpuUsage(), user +
// system), which keeps repetitions comparable on a shared machine; the wall-clock speed is printed
// beside it. One uncounted round of each warms up first. The ratio is taken per repetition (end to
// end / parse only, same repetition) and its median reported. Floors: >= 500,000 lines/s end to
// end, and >= 0.5 of parse only. Read only is no floor: it says what a line costs before parsing.
//
// Memory: replay() fed a generated stream (no file) of 1M and then 10M lines in fresh child
// processes, 100,000 clients; peak RSS (resourceUsage().maxRSS) of each. The footprint must not grow
// with the log: the floor is 10M's peak <= 1.25 x 1M's.
//
// Writes bench/replay.json and the section of docs/replay.md between its markers unless --quick
// (smaller inputs, fewer repetitions; prints only); --docs rewrites the section from bench/replay.json.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";

import { logpushLine, traffic } from "../test/js/fixtures/replay/traffic.js";
import { parseLogpushLine } from "../worker/cli/replay/formats/logpush.js";
import { LogpushBatchReader } from "../worker/cli/replay/formats/logpush-batch.js";
import { readLines } from "../worker/cli/replay/input.js";
import { replay } from "../worker/cli/replay/replay.js";
import { createRuleEngine } from "../worker/cli/replay/rule-engine.js";
import { parseRule } from "../worker/cli/replay/rules.js";
import { writeDocsSection } from "./lib/docs-section.js";
import { decideParts } from "./lib/replay-decide-parts.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const quick = process.argv.includes("--quick");
const RULE = "ip 100/60s sliding-counter";
const FLOOR_LINES_PER_SEC = 500_000;
const FLOOR_RATIO = 0.5;
const FLOOR_MEMORY_GROWTH = 1.25;

const cpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};
const median = (/** @type {number[]} */ xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// One generated stream of `count` Logpush lines from 100,000 clients, made as it is read.
/** @param {number} count */
function generatedLog(count) {
  const CHUNK = 50_000;
  let made = 0;
  let seed = 1;
  return Readable.from(
    (async function* lines() {
      while (made < count) {
        const n = Math.min(CHUNK, count - made);
        const start = made;
        const requests = traffic({ seed: seed++, count: n, clients: 100_000, durationMs: 86_400_000 * (n / count), abusers: 20 });
        // Consecutive chunks follow in time: shift each by where the previous ended.
        const shift = Math.floor((86_400_000 * start) / count);
        yield `${requests.map((r) => logpushLine({ ...r, timeMs: r.timeMs + shift })).join("\n")}\n`;
        made += n;
      }
    })(),
  );
}

async function memoryChild(count) {
  const result = await replay({ inputs: ["-"], format: "logpush", engine: createRuleEngine([parseRule(RULE, 0)]), stdin: generatedLog(count) });
  process.stdout.write(JSON.stringify({ lines: result.lines.replayed, maxRssMiB: process.resourceUsage().maxRSS / 1024 }));
}

// What the reader alone costs: the lines found as byte ranges, nothing parsed (the core's reader takes
// the bytes; a line is made a string only for JSON.parse, the baseline).
async function readOnly(file) {
  let lines = 0;
  for await (const batch of readLines([file], { read: 0, total: null })) {
    for (let i = 0; i < batch.count; i++) if (batch.ends[i] > batch.starts[i]) lines++;
  }
  return lines;
}

// The replay's own parser: each batch read by the core, a record made per line (the core's fallback,
// parseLogpushLine, for the lines it does not answer for).
async function parseOnly(file) {
  const reader = new LogpushBatchReader();
  let records = 0;
  for await (const batch of readLines([file], { read: 0, total: null })) {
    if (reader.read(batch)) {
      for (let i = 0; i < batch.count; i++) if (reader.recordAt(i) !== null) records++;
    } else {
      for (let i = 0; i < batch.count; i++) if (parseLogpushLine(batch.text(i)) !== null) records++;
    }
  }
  return records;
}

// The parser before the core's reader: every line a string, JSON.parse'd by parseLogpushLine.
async function jsonParseOnly(file) {
  let records = 0;
  for await (const batch of readLines([file], { read: 0, total: null })) {
    for (let i = 0; i < batch.count; i++) if (parseLogpushLine(batch.text(i)) !== null) records++;
  }
  return records;
}

async function endToEnd(file) {
  const result = await replay({ inputs: [file], format: "logpush", engine: createRuleEngine([parseRule(RULE, 0)]) });
  return result.lines.replayed;
}

/** @param {(file: string) => Promise<number>} run @param {string} file */
async function measure(run, file) {
  const cpu = cpuSeconds();
  const wall = performance.now();
  const lines = await run(file);
  return { lines, cpuSec: cpuSeconds() - cpu, wallSec: (performance.now() - wall) / 1000 };
}

// The spread of the repetitions: lowest and highest of each speed and of the ratio.
/** @param {any[]} rows @param {(m: any) => number} cpu */
function spreadLine(rows, cpu) {
  const range = (/** @type {number[]} */ xs, /** @type {(x: number) => string} */ f) => `${f(Math.min(...xs))} to ${f(Math.max(...xs))}`;
  const n = (/** @type {number} */ x) => Math.round(x).toLocaleString("en-US");
  return `Spread over the ${rows.length} repetitions: parse only ${range(rows.map((r) => cpu(r.parse)), n)} lines/s, end to end ${range(rows.map((r) => cpu(r.replay)), n)} lines/s, ratio ${range(rows.map((r) => r.ratio), (x) => x.toFixed(2))}.`;
}

// Where a line's CPU time goes, from the medians of the three runs: the reader (read only), the
// parser (parse only less read only), the decision and the statistics (end to end less parse only).
/** @param {any[]} rows */
function perLine(rows) {
  const us = (/** @type {(r: any) => number} */ f) => (median(rows.map(f)) * 1e6).toFixed(2);
  const perLineSec = (/** @type {any} */ m) => m.cpuSec / m.lines;
  const jsonParse = rows[0].jsonParse ? ` Instead of the core's reader, each line made a string and given to JSON.parse: parsing ${us((r) => perLineSec(r.jsonParse) - perLineSec(r.read))} us.` : "";
  return `Per line, CPU time (medians): reading ${us((r) => perLineSec(r.read))} us, parsing ${us((r) => perLineSec(r.parse) - perLineSec(r.read))} us, deciding and counting ${us((r) => perLineSec(r.replay) - perLineSec(r.parse))} us; end to end ${us((r) => perLineSec(r.replay))} us (500,000 lines/s is 2 us).${jsonParse}`;
}

// Deciding and counting by part (bench/lib/replay-decide-parts.js), medians of the rounds with their range.
/** @param {Record<string, { medianUs: number, minUs: number, maxUs: number }>} parts @param {number} rounds */
function partsLine(parts, rounds) {
  const us = (/** @type {{ medianUs: number, minUs: number, maxUs: number }} */ p) => `${p.medianUs.toFixed(2)} us (${p.minUs.toFixed(2)} to ${p.maxUs.toFixed(2)})`;
  const both = parts.library.medianUs + parts.statistics.medianUs;
  return `Deciding and counting by part, on 200,000 of the same requests already read (CPU time per request, medians of ${rounds} rounds, range): the library's decision, the code a Worker runs for this rule, ${us(parts.library)}, of which the core's check alone takes ${us(parts.core)}; the per-client statistics the report is made of (the client's record, its peak counted in a core of its own, the denials over time) ${us(parts.statistics)}. Those two are ${both.toFixed(2)} us a request before a byte is read, of the 2 us a line that 500,000 lines/s allows.`;
}

// The section of docs/replay.md, from a report (this run's, or bench/replay.json with --docs).
/** @param {any} report */
function writeDocs(report) {
  const n = (/** @type {number} */ x) => Math.round(x).toLocaleString("en-US");
  const cpu = (/** @type {any} */ m) => m.lines / m.cpuSec;
  const wall = (/** @type {any} */ m) => m.lines / m.wallSec;
  writeDocsSection(
    join(root, "docs/replay.md"),
    "replay",
    [
      `Run of ${report.date.slice(0, 16).replace("T", " ")} UTC, Node ${report.node}, load ${report.load.map((/** @type {number} */ l) => l.toFixed(1)).join(" / ")} (1 / 5 / 15 min) on a 2-core machine shared with other work; ${n(report.lines)} generated Logpush lines (${report.bytesPerLine ?? "about 430"} bytes each), rule \`${report.rule}\`, ${report.repetitions} repetitions. Speeds are lines per second of the process's CPU time (user + system); the wall-clock speed is beside each.`,
      "",
      "| floor | met | measured |",
      "|---|---|---|",
      ...report.floors.map((/** @type {any} */ f) => `| ${f.floor} | ${f.met ? "yes" : "**no**"} | ${f.measured.toLocaleString("en-US")} |`),
      "",
      "| repetition | read only, lines/s | parse only, lines/s | JSON.parse per line, lines/s | end to end, lines/s | ratio |",
      "|---|---|---|---|---|---|",
      ...report.rows.map((/** @type {any} */ r, /** @type {number} */ i) => `| ${i + 1} | ${r.read ? n(cpu(r.read)) : "-"} | ${n(cpu(r.parse))} (wall ${n(wall(r.parse))}) | ${r.jsonParse ? n(cpu(r.jsonParse)) : "-"} | ${n(cpu(r.replay))} (wall ${n(wall(r.replay))}) | ${r.ratio.toFixed(2)} |`),
      "",
      spreadLine(report.rows, cpu),
      ...(report.rows[0].read ? ["", perLine(report.rows)] : []),
      ...(report.decideParts ? ["", partsLine(report.decideParts, report.repetitions)] : []),
      "",
      `Peak RSS: ${report.memory.map((/** @type {any} */ m) => `${n(m.lines)} lines ${m.maxRssMiB.toFixed(0)} MiB`).join(", ")} (100,000 clients, the log generated as it is read).`,
    ].join("\n"),
  );
}

async function main() {
  if (process.argv.includes("--docs")) return writeDocs(JSON.parse(readFileSync(join(root, "bench/replay.json"), "utf8")));
  const childCount = process.argv.indexOf("--memory-child");
  if (childCount > 0) return memoryChild(Number(process.argv[childCount + 1]));

  const lines = quick ? 200_000 : 1_000_000;
  const repetitions = quick ? 3 : 7;
  const dir = mkdtempSync(join(tmpdir(), "sluice-bench-replay-"));
  const file = join(dir, "http_requests.log");
  const requests = traffic({ seed: 11, count: lines, clients: 20_000, durationMs: 3_600_000, abusers: 20 });
  writeFileSync(file, `${requests.map((r) => logpushLine(r)).join("\n")}\n`);
  const bytesPerLine = Math.round(statSync(file).size / lines);
  // One round of each first, not counted: the first parse pays for compiling the parser and reading
  // the file into the page cache, which would flatter the first ratio.
  await parseOnly(file);
  await endToEnd(file);
  await readOnly(file);
  await jsonParseOnly(file);
  const rows = [];
  const runs = { read: readOnly, parse: parseOnly, jsonParse: jsonParseOnly, replay: endToEnd };
  for (let rep = 0; rep < repetitions; rep++) {
    // Each repetition in another order, so no one of them always follows another.
    const order = [["read", "parse", "jsonParse", "replay"], ["replay", "jsonParse", "parse", "read"], ["parse", "replay", "read", "jsonParse"], ["jsonParse", "read", "replay", "parse"]][rep % 4];
    /** @type {Record<string, any>} */
    const row = {};
    for (const which of order) row[which] = await measure(runs[/** @type {keyof typeof runs} */ (which)], file);
    row.ratio = row.replay.lines / row.replay.cpuSec / (row.parse.lines / row.parse.cpuSec);
    rows.push(row);
    console.log(`rep ${rep + 1}: read ${Math.round(row.read.lines / row.read.cpuSec).toLocaleString("en-US")}/s cpu; JSON.parse per line ${Math.round(row.jsonParse.lines / row.jsonParse.cpuSec).toLocaleString("en-US")}/s cpu; parse ${Math.round(row.parse.lines / row.parse.cpuSec).toLocaleString("en-US")}/s cpu (${Math.round(row.parse.lines / row.parse.wallSec).toLocaleString("en-US")}/s wall); end to end ${Math.round(row.replay.lines / row.replay.cpuSec).toLocaleString("en-US")}/s cpu (${Math.round(row.replay.lines / row.replay.wallSec).toLocaleString("en-US")}/s wall); ratio ${row.ratio.toFixed(2)}`);
  }
  // Deciding and counting by part, on the first 200,000 requests already read (bench/lib/replay-decide-parts.js).
  const engineOf = () => createRuleEngine([parseRule(RULE, 0)]);
  const ruleOf = engineOf().rules[0];
  const sample = readFileSync(file, "latin1").split("\n", 200_000).map((line) => parseLogpushLine(line)).filter((record) => record !== null);
  const partsPerRound = decideParts(/** @type {any[]} */ (sample), { engineOf, rule: { algorithm: ruleOf.algorithm, limit: ruleOf.limit, windowMs: ruleOf.windowMs, keyCapacity: ruleOf.keyCapacity }, rounds: repetitions });
  const partCosts = Object.fromEntries(Object.entries(partsPerRound).map(([name, us]) => [name, { medianUs: median(us), minUs: Math.min(...us), maxUs: Math.max(...us) }]));
  console.log(`deciding by part, us per request: ${Object.entries(partCosts).map(([name, p]) => `${name} ${p.medianUs.toFixed(2)} (${p.minUs.toFixed(2)} to ${p.maxUs.toFixed(2)})`).join(", ")}`);
  rmSync(dir, { recursive: true, force: true });
  const endToEndPerSec = median(rows.map((r) => r.replay.lines / r.replay.cpuSec));
  const parsePerSec = median(rows.map((r) => r.parse.lines / r.parse.cpuSec));
  const ratio = median(rows.map((r) => r.ratio));

  const memory = [];
  for (const count of process.argv.includes("--no-memory") ? [] : quick ? [100_000, 1_000_000] : [1_000_000, 10_000_000]) {
    const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), "--memory-child", String(count)], { encoding: "utf8", maxBuffer: 1 << 20 });
    memory.push(JSON.parse(out));
    console.log(`memory: ${count.toLocaleString("en-US")} lines, peak RSS ${memory.at(-1).maxRssMiB.toFixed(0)} MiB`);
  }
  if (memory.length === 0) return; // --no-memory: throughput only, for quick looks
  const growth = memory[1].maxRssMiB / memory[0].maxRssMiB;
  const floors = [
    { floor: `end to end >= ${FLOOR_LINES_PER_SEC.toLocaleString("en-US")} Logpush lines/s (CPU time)`, met: endToEndPerSec >= FLOOR_LINES_PER_SEC, measured: Math.round(endToEndPerSec) },
    { floor: `end to end >= ${FLOOR_RATIO} x parse only (median of per-repetition ratios)`, met: ratio >= FLOOR_RATIO, measured: Number(ratio.toFixed(3)) },
    { floor: `peak RSS at ${memory[1].lines.toLocaleString("en-US")} lines <= ${FLOOR_MEMORY_GROWTH} x at ${memory[0].lines.toLocaleString("en-US")}`, met: growth <= FLOOR_MEMORY_GROWTH, measured: Number(growth.toFixed(3)) },
  ];
  for (const f of floors) console.log(`${f.met ? "met" : "NOT MET"}: ${f.floor}: ${f.measured.toLocaleString("en-US")}`);
  const report = { date: new Date().toISOString(), node: process.version, load: (await import("node:os")).loadavg(), rule: RULE, lines, bytesPerLine, repetitions, parsePerSec: Math.round(parsePerSec), endToEndPerSec: Math.round(endToEndPerSec), ratio, rows, decideParts: partCosts, memory, floors };
  if (quick) return;
  writeFileSync(join(root, "bench/replay.json"), `${JSON.stringify(report, null, 2)}\n`);
  writeDocs(report);
}

await main();
