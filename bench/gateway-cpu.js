// node bench/gateway-cpu.js [--quick] [--only=NAME,...] [--no-write]: what the gateway costs in CPU
// beside the thinnest Worker that forwards the same request (issue 23).
//
// One Miniflare runs two Workers: `gateway` (the shipped worker/gateway on its real limiter, with the
// configuration below) and `bare` (bench/gateway-cpu/bare.js: fetch() the upstream, return the response
// as is; a constant 429 for the 429 row). Both fetch the same upstream over HTTP: a Node server in this
// process (bench/gateway-cpu/upstream.js, port UPSTREAM_PORT), so that no upstream work runs on the
// measured thread and each Worker's MiB/s of CPU is its own. Each scenario sends a batch of requests
// to each of the two, one after the other, in an order rotated per repetition, and reads the on-CPU
// time of workerd's thread that runs the JavaScript (/proc/<pid>/task/<tid>/schedstat,
// lib/thread-cpu.js) before and after each batch. Everything that thread does counts for both (the
// HTTP exchanges with Node on both sides), so the difference is what the gateway adds. A figure is the median over repetitions of the
// per-repetition difference (or rate), with the range beside it.
//
// The cheap rows (a small request, a 429: ~1.5 ms of the thread each, most of it Miniflare's own
// dispatch, for a difference of 50-150 us) are measured in blocks: a repetition's batch is split into
// blocks of `block` requests, the subjects taking turns block by block (A B B A ...), and each
// subject's blocks summed. Whatever else slows the thread for a while (another process's work evicting
// the caches, a collection) then falls on both subjects alike instead of on one whole batch; and they
// get more repetitions (`repetitions` times the bench's), since their batches are short.
//
// The rows of a small request and a 429 also run bench/gateway-cpu/least.js in the same blocks: the
// least a Worker does that keeps the gateway's guarantees, each in its cheapest form, with nothing of
// sluice in it. What it adds to the bare Worker is how much of each floor any gateway spends before its
// own code; what the gateway adds to it is sluice's share.
//
// --against=DIR: a third subject, the gateway as the tree at DIR has it (e.g. `git archive` of an
// earlier commit), measured in the same blocks; the figures then also say what the working tree's
// gateway changes against it (an A/B of a change, interleaved like the rest).
//
// Writes bench/gateway-cpu.json and the section of docs/gateway.md between its markers.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Miniflare } from "miniflare";

import { ADMIN_TOKEN, HEADERS, UPSTREAM_TOKEN, bundleWorker, gatewayConfig } from "./gateway-cpu/setup.js";
import { startUpstream } from "./gateway-cpu/upstream.js";
import { writeDocsSection } from "./lib/docs-section.js";
import { summarizeProfile } from "./lib/profile-summary.js";
import { Inspector } from "./lib/workerd.js";
import { median, rotate } from "./lib/stats.js";
import { mostRun, threadNs, threadTimes, workerdPid } from "./lib/thread-cpu.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const args = process.argv.slice(2);
const quick = args.includes("--quick");
const noWrite = args.includes("--no-write") || quick;
const only = args.find((a) => a.startsWith("--only="))?.slice(7).split(",") ?? null;
const REPETITIONS = quick ? 3 : 7;
// --against=DIR: the gateway of another tree as a third subject (see above).
const againstDir = args.find((a) => a.startsWith("--against="))?.slice(10) ?? null;
const SUBJECTS = againstDir === null ? ["gateway", "bare"] : ["gateway", "bare", "against"];
// The subjects of a scenario: a scenario that names a `least` path also runs gateway-cpu/least.js
// (the least a Worker keeping the same guarantees does, no sluice code) in the same blocks.
const subjectsOf = (s) => (s.least === undefined ? SUBJECTS : [...SUBJECTS, "least"]);
// The path a subject is sent in scenario `s`.
const pathOf = (s, subject) => s[subject === "against" ? "gateway" : subject];
// --profile=SCENARIO: a CPU profile of the gateway's isolate through that scenario's requests, printed
// by function (self time) instead of the figures; --profile-subject=least profiles least.js's isolate
// instead, --profile-batches=N sends N batches (3 by default). The profiler inflates what the runtime's
// own calls cost (timers most: a profiled setTimeout looked ten times what a loop of them costs), so
// read its shares as where to look, and measure a change with --against.
const profileScenario = args.find((a) => a.startsWith("--profile="))?.slice(10) ?? null;

// The upstream server's port (within the range this bench may use on a shared machine).
const UPSTREAM_PORT = Number(args.find((a) => a.startsWith("--port="))?.slice(7) ?? 18300);
const UPSTREAM_ORIGIN = `http://127.0.0.1:${UPSTREAM_PORT}`;
const CONFIG = gatewayConfig(UPSTREAM_ORIGIN);

const MiB = 1024 * 1024;
const body = (bytes, chunk, kind) => `body?bytes=${bytes}&chunk=${chunk}&kind=${kind}`;
// The cheap rows: a batch per repetition in blocks of 10, taking turns, and six times the repetitions.
const CHEAP = { batch: 200, block: 10, repetitions: 6 };
// Each scenario: the gateway's path, the bare Worker's path, requests per batch, body bytes per request.
const SCENARIOS = [
  { name: "small", what: "a small JSON GET (one rule, masking and the body watchdog on)", gateway: "/api/small", bare: "/api/small", least: "/api/small", ...CHEAP },
  { name: "small-unwatched", what: "the same, bodyTimeoutMs null", gateway: "/bare-api/small", bare: "/api/small", ...CHEAP },
  { name: "limited", what: "a 429 (the rule denies) beside a Worker that answers a constant 429", gateway: "/limited/small", bare: "/limited", least: "/limited/small", ...CHEAP },
  { name: "text", what: "1 MiB of text in 4 KiB chunks, masked", gateway: `/api/${body(MiB, 4096, "text")}`, bare: `/api/${body(MiB, 4096, "text")}`, batch: 8, bytes: MiB },
  { name: "escapes", what: "1 MiB made of `%&\\+` in 4 KiB chunks, masked", gateway: `/api/${body(MiB, 4096, "escapes")}`, bare: `/api/${body(MiB, 4096, "escapes")}`, batch: 8, bytes: MiB },
  { name: "binary", what: "1 MiB of image/webp in 4 KiB chunks (not masked)", gateway: `/api/${body(MiB, 4096, "binary")}`, bare: `/api/${body(MiB, 4096, "binary")}`, batch: 8, bytes: MiB },
  { name: "binary-unwatched", what: "the same with bodyTimeoutMs null (passed natively)", gateway: `/bare-api/${body(MiB, 4096, "binary")}`, bare: `/api/${body(MiB, 4096, "binary")}`, batch: 8, bytes: MiB },
  { name: "binary-deadline", what: "the same with bodyTimeoutMs null and bodyDeadlineMs 600000 (piped natively, the whole body bounded)", gateway: `/deadline-api/${body(MiB, 4096, "binary")}`, bare: `/api/${body(MiB, 4096, "binary")}`, batch: 8, bytes: MiB },
  { name: "optout", what: "1 MiB of text in 4 KiB chunks on a route with maskBody \"never\"", gateway: `/optout/${body(MiB, 4096, "text")}`, bare: `/api/${body(MiB, 4096, "text")}`, batch: 8, bytes: MiB },
  { name: "optout-deadline", what: "the same with bodyTimeoutMs null and bodyDeadlineMs 600000", gateway: `/deadline-optout/${body(MiB, 4096, "text")}`, bare: `/api/${body(MiB, 4096, "text")}`, batch: 8, bytes: MiB },
  { name: "text-length", what: "1 MiB of text written 4 KiB at a time with a Content-Length, masked", gateway: `/api/${body(MiB, 4096, "text")}&length=1`, bare: `/api/${body(MiB, 4096, "text")}&length=1`, batch: 8, bytes: MiB },
  { name: "binary-length", what: "1 MiB of image/webp written 4 KiB at a time with a Content-Length (not masked, watched)", gateway: `/api/${body(MiB, 4096, "binary")}&length=1`, bare: `/api/${body(MiB, 4096, "binary")}&length=1`, batch: 8, bytes: MiB },
  { name: "whole-32k", what: "32 KiB of text with a Content-Length, masked (read whole)", gateway: `/api/${body(MiB / 32, 4096, "text")}&length=1`, bare: `/api/${body(MiB / 32, 4096, "text")}&length=1`, batch: 40, bytes: MiB / 32 },
  { name: "chunks-256", what: "256 KiB of text in 256-byte chunks, masked", gateway: `/api/${body(MiB / 4, 256, "text")}`, bare: `/api/${body(MiB / 4, 256, "text")}`, batch: 4, bytes: MiB / 4, chunk: 256 },
  { name: "chunks-4k", what: "256 KiB of text in 4 KiB chunks, masked", gateway: `/api/${body(MiB / 4, 4096, "text")}`, bare: `/api/${body(MiB / 4, 4096, "text")}`, batch: 4, bytes: MiB / 4, chunk: 4096 },
  { name: "chunks-64k", what: "256 KiB of text in 64 KiB chunks, masked", gateway: `/api/${body(MiB / 4, 65536, "text")}`, bare: `/api/${body(MiB / 4, 65536, "text")}`, batch: 4, bytes: MiB / 4, chunk: 65536 },
].filter((s) => only === null || only.includes(s.name));

async function start(inspectorPort) {
  const esm = (path, contents) => ({ type: "ESModule", path, contents });
  const plain = (name, file, extra = {}) => ({
    name,
    modulesRoot: "/",
    modules: [esm("/worker.js", readFileSync(join(root, "bench/gateway-cpu", file), "utf8"))],
    compatibilityDate: "2026-04-20",
    ...extra,
  });
  return new Miniflare({
    ...(inspectorPort === undefined ? {} : { inspectorPort }),
    workers: [
      {
        name: "gateway",
        modulesRoot: "/",
        modules: [
          esm("/worker.js", await bundleWorker(join(root, "bench/gateway-cpu/gateway.js"))),
          esm("/bench-config.js", `export default ${JSON.stringify(CONFIG)};\n`),
          { type: "CompiledWasm", path: "/sluice.wasm", contents: readFileSync(join(root, "wasm-bindings/sluice.wasm")) },
        ],
        compatibilityDate: "2026-04-20",
        bindings: { UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN },
      },
      plain("bare", "bare.js", { bindings: { UPSTREAM_ORIGIN } }),
      plain("least", "least.js", { bindings: { UPSTREAM_ORIGIN, UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN } }),
      ...(againstDir === null
        ? []
        : [
            {
              name: "against",
              modulesRoot: "/",
              modules: [
                esm("/worker.js", await bundleWorker(join(resolve(againstDir), "bench/gateway-cpu/gateway.js"))),
                esm("/bench-config.js", `export default ${JSON.stringify(CONFIG)};\n`),
                { type: "CompiledWasm", path: "/sluice.wasm", contents: readFileSync(join(resolve(againstDir), "wasm-bindings/sluice.wasm")) },
              ],
              compatibilityDate: "2026-04-20",
              bindings: { UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN },
            },
          ]),
    ],
    // What a Worker writes is read and dropped. The gateway here logs nowhere (gateway-cpu/gateway.js
    // passes `log: () => {}`: its line is built and stringified, not written); the console.log line the
    // shipped Worker writes is a step of bench/gateway-parts.js.
    handleRuntimeStdio(out, err) {
      out.resume();
      err.on("data", (chunk) => process.stderr.write(chunk));
    },
  });
}

async function batch(worker, path, count) {
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const response = await worker.fetch(`https://gateway.bench${path}`, { headers: HEADERS });
    bytes += (await response.arrayBuffer()).byteLength;
  }
  return bytes;
}

async function main() {
  const mf = await start();
  await mf.ready;
  const pid = workerdPid();
  if (pid === null) throw new Error("workerd's process was not found (needs Linux /proc)");
  const workers = Object.fromEntries(await Promise.all([...SUBJECTS, "least"].map(async (name) => [name, await mf.getWorker(name)])));
  // The thread that runs the JavaScript: the one that ran most through a warm-up of every scenario.
  const before = threadTimes(pid);
  for (const s of SCENARIOS) {
    for (const subject of subjectsOf(s)) await batch(workers[subject], pathOf(s, subject), Math.max(2, s.batch >> 1));
  }
  const tid = mostRun(before, threadTimes(pid));
  const samples = Object.fromEntries(SCENARIOS.map((s) => [s.name, { ...Object.fromEntries(subjectsOf(s).map((subject) => [subject, []])), bytes: {} }]));
  for (let rep = 0; rep < REPETITIONS; rep++) {
    for (const s of rotate(SCENARIOS, rep)) {
      const blocks = s.block === undefined ? 1 : Math.ceil(s.batch / s.block);
      const perBlock = s.batch / blocks;
      for (let sub = 0; sub < (s.repetitions ?? 1); sub++) {
        /** @type {Record<string, number>} */
        const ns = Object.fromEntries(subjectsOf(s).map((subject) => [subject, 0]));
        let order = rotate(subjectsOf(s), rep + sub);
        for (let b = 0; b < blocks; b++) {
          for (const subject of order) {
            const t0 = threadNs(pid, tid);
            const bytes = await batch(workers[subject], pathOf(s, subject), perBlock);
            ns[subject] += threadNs(pid, tid) - t0;
            samples[s.name].bytes[subject] = bytes / perBlock;
          }
          // A B, then B A: neither subject always follows the other.
          order = [...order].reverse();
        }
        for (const subject of subjectsOf(s)) samples[s.name][subject].push(ns[subject] / s.batch / 1000);
      }
    }
    process.stdout.write(`repetition ${rep + 1}/${REPETITIONS}\r`);
  }
  await mf.dispose();
  const results = SCENARIOS.map((s) => {
    const g = samples[s.name].gateway;
    const b = samples[s.name].bare;
    const added = g.map((us, i) => us - b[i]);
    const r = {
      name: s.name,
      what: s.what,
      gatewayUs: median(g),
      bareUs: median(b),
      addedUs: median(added),
      addedRange: [Math.min(...added), Math.max(...added)],
      bytes: samples[s.name].bytes,
      repetitions: g.length,
    };
    if (againstDir !== null) {
      const a = samples[s.name].against;
      const change = g.map((us, i) => us - a[i]);
      r.againstUs = median(a);
      r.changeUs = median(change);
      r.changeRange = [Math.min(...change), Math.max(...change)];
    }
    if (s.least !== undefined) {
      const l = samples[s.name].least;
      const leastAdded = l.map((us, i) => us - b[i]);
      const overLeast = g.map((us, i) => us - l[i]);
      r.leastUs = median(l);
      r.leastAddedUs = median(leastAdded);
      r.leastAddedRange = [Math.min(...leastAdded), Math.max(...leastAdded)];
      r.overLeastUs = median(overLeast);
      r.overLeastRange = [Math.min(...overLeast), Math.max(...overLeast)];
    }
    if (s.bytes !== undefined) {
      const mibps = (us) => s.bytes / MiB / (us / 1e6);
      r.gatewayMiBps = median(g.map(mibps));
      r.bareMiBps = median(b.map(mibps));
      r.shareOfBare = median(g.map((us, i) => mibps(us) / mibps(b[i])));
      r.addedMsPerMiB = median(added.map((us) => us / 1000 / (s.bytes / MiB)));
      if (s.chunk !== undefined) r.addedUsPerChunk = median(added.map((us) => us / (s.bytes / s.chunk)));
    }
    return r;
  });
  return results;
}

function fmt(n, digits = 0) {
  return n.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

// A difference with its sign (a median below the bare Worker's is noise, shown as it is).
function signed(n) {
  return `${n >= 0 ? "+" : ""}${fmt(n)}`;
}

function verdicts(results) {
  const by = Object.fromEntries(results.map((r) => [r.name, r]));
  const rows = [];
  const add = (floor, value, met) => rows.push({ floor, value, met });
  if (by.small) add("a small proxied request: <= +150 us", `${signed(by.small.addedUs)} us`, by.small.addedUs <= 150);
  if (by.limited) add("the 429 path: <= +50 us over a constant 429", `${signed(by.limited.addedUs)} us`, by.limited.addedUs <= 50);
  if (by.text) add("a masked body: >= 250 MiB/s of CPU", `${fmt(by.text.gatewayMiBps)} MiB/s`, by.text.gatewayMiBps >= 250);
  if (by["text-length"]) add("a masked body with a Content-Length: >= 250 MiB/s of CPU", `${fmt(by["text-length"].gatewayMiBps)} MiB/s`, by["text-length"].gatewayMiBps >= 250);
  if (by.escapes) add("a masked body of `%&\\+`: >= 250 MiB/s of CPU", `${fmt(by.escapes.gatewayMiBps)} MiB/s`, by.escapes.gatewayMiBps >= 250);
  if (by.binary) add("a binary body: >= 80 % of the bare Worker's MiB/s", `${fmt(100 * by.binary.shareOfBare)} %`, by.binary.shareOfBare >= 0.8);
  if (by["binary-length"]) add("a binary body with a Content-Length: >= 80 % of the bare Worker's MiB/s", `${fmt(100 * by["binary-length"].shareOfBare)} %`, by["binary-length"].shareOfBare >= 0.8);
  if (by["binary-unwatched"]) add("a binary body, bodyTimeoutMs null: >= 80 % of the bare Worker's MiB/s", `${fmt(100 * by["binary-unwatched"].shareOfBare)} %`, by["binary-unwatched"].shareOfBare >= 0.8);
  if (by.optout) add("a route with maskBody \"never\": >= 80 % of the bare Worker's MiB/s", `${fmt(100 * by.optout.shareOfBare)} %`, by.optout.shareOfBare >= 0.8);
  if (by["binary-deadline"]) add("a binary body, bodyTimeoutMs null and bodyDeadlineMs set: >= 80 % of the bare Worker's MiB/s", `${fmt(100 * by["binary-deadline"].shareOfBare)} %`, by["binary-deadline"].shareOfBare >= 0.8);
  if (by["optout-deadline"]) add("a route with maskBody \"never\", bodyTimeoutMs null and bodyDeadlineMs set: >= 80 % of the bare Worker's MiB/s", `${fmt(100 * by["optout-deadline"].shareOfBare)} %`, by["optout-deadline"].shareOfBare >= 0.8);
  if (by["chunks-256"] && by["chunks-64k"]) {
    // The words: "per-chunk cost independent of chunk size to within 2x from 256 B to 64 KiB",
    // the cost the relay adds to one HTTP chunk. Per MiB is a second row: a 256-byte chunk is 256
    // times as many stream steps per MiB as a 64 KiB one, so that ratio follows the step count.
    const perChunk = Math.max(by["chunks-256"].addedUsPerChunk, by["chunks-64k"].addedUsPerChunk) / Math.min(by["chunks-256"].addedUsPerChunk, by["chunks-64k"].addedUsPerChunk);
    add("added CPU per chunk at 256-byte chunks within 2x of 64 KiB chunks (either way)", `x${fmt(perChunk, 2)}`, perChunk <= 2);
    const ratio = by["chunks-256"].addedMsPerMiB / by["chunks-64k"].addedMsPerMiB;
    add("added CPU per MiB at 256-byte chunks within 2x of 64 KiB chunks", `x${fmt(ratio, 2)}`, ratio <= 2);
  }
  return rows;
}

function markdown(results, machine, repetitions = REPETITIONS) {
  const lines = [
    `Measured by \`node bench/gateway-cpu.js\` (${machine}): on-CPU time of workerd's JavaScript thread per request, the shipped gateway (its log line built but written nowhere: \`console.log\` is a step of bench/gateway-parts.js) beside the bare Worker (fetch and return) in front of the same upstream (a Node HTTP server outside workerd; bodies written as HTTP chunks of the stated size), ${repetitions} interleaved repetitions (the rows of a small request and a 429: ${repetitions * CHEAP.repetitions}, each of ${CHEAP.batch} requests per subject in blocks of ${CHEAP.block}, the subjects taking turns block by block); medians, with the range of the per-repetition difference.`,
    "",
    "| scenario | gateway | bare Worker | gateway adds (range) | MiB/s of CPU, gateway / bare |",
    "|---|---|---|---|---|",
  ];
  for (const r of results) {
    const rate = r.gatewayMiBps === undefined ? "" : `${fmt(r.gatewayMiBps)} / ${fmt(r.bareMiBps)} (${fmt(100 * r.shareOfBare)} %)`;
    lines.push(`| ${r.what} | ${fmt(r.gatewayUs)} us | ${fmt(r.bareUs)} us | ${signed(r.addedUs)} us (${fmt(r.addedRange[0])} to ${fmt(r.addedRange[1])}) | ${rate} |`);
  }
  const compared = results.filter((r) => r.changeUs !== undefined);
  if (compared.length > 0) {
    lines.push("", `Against the gateway of ${againstDir} (the same blocks, interleaved):`, "", "| scenario | this tree | against | change (range) |", "|---|---|---|---|");
    for (const r of compared) lines.push(`| ${r.name} | ${fmt(r.gatewayUs)} us | ${fmt(r.againstUs)} us | ${signed(r.changeUs)} us (${fmt(r.changeRange[0])} to ${fmt(r.changeRange[1])}) |`);
  }
  const least = results.filter((r) => r.leastUs !== undefined);
  if (least.length > 0) {
    lines.push(
      "",
      "The least a Worker keeping the same guarantees does (`bench/gateway-cpu/least.js`: each guarantee in its cheapest form, no sluice code; a lower bound, never more than the gateway must do), in the same blocks:",
      "",
      "| scenario | least Worker | it adds to the bare Worker (range) | the gateway adds to it (range) |",
      "|---|---|---|---|",
    );
    for (const r of least) lines.push(`| ${r.what} | ${fmt(r.leastUs)} us | ${signed(r.leastAddedUs)} us (${fmt(r.leastAddedRange[0])} to ${fmt(r.leastAddedRange[1])}) | ${signed(r.overLeastUs)} us (${fmt(r.overLeastRange[0])} to ${fmt(r.overLeastRange[1])}) |`);
  }
  const perChunk = results.filter((r) => r.addedUsPerChunk !== undefined);
  if (perChunk.length > 0) {
    const size = (/** @type {number} */ bytes) => (bytes >= 1024 ? `${bytes / 1024} KiB` : `${bytes} bytes`);
    const each = perChunk.map((r) => `${fmt(r.addedUsPerChunk, 1)} us at ${size(SCENARIOS.find((s) => s.name === r.name).chunk)}`).join(", ");
    lines.push("", `What the masked relay adds per HTTP chunk the upstream writes (added time / chunks, ${perChunk.length === 1 ? "one size" : "by chunk size"}): ${each}.`);
  }
  lines.push("", "| floor | measured | met |", "|---|---|---|");
  for (const v of verdicts(results)) lines.push(`| ${v.floor} | ${v.value} | ${v.met ? "yes" : "**no**"} |`);
  return lines.join("\n");
}

async function profile(name) {
  const scenario = SCENARIOS.find((s) => s.name === name);
  // --inspector-port=N keeps the inspector within the ports a shared machine gives this run.
  const inspectorPort = Number(args.find((a) => a.startsWith("--inspector-port="))?.slice(17) ?? 9700 + Math.floor(Math.random() * 90));
  const mf = await start(inspectorPort);
  await mf.ready;
  // --profile-subject=least: gateway-cpu/least.js's isolate instead (what the same scenario costs there).
  const subject = args.find((a) => a.startsWith("--profile-subject="))?.slice(18) ?? "gateway";
  const gateway = await mf.getWorker(subject);
  const path = pathOf(scenario, subject);
  await batch(gateway, path, scenario.batch);
  const targets = await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json();
  const target = targets.find((t) => t.webSocketDebuggerUrl.endsWith(`/core:user:${subject}`));
  const inspector = await Inspector.open(target.webSocketDebuggerUrl);
  await inspector.send("Profiler.enable");
  await inspector.send("Profiler.setSamplingInterval", { interval: 50 });
  await inspector.send("Profiler.start");
  await batch(gateway, path, scenario.batch * Number(args.find((a) => a.startsWith("--profile-batches="))?.slice(18) ?? 3));
  const { profile: taken } = await inspector.send("Profiler.stop");
  inspector.close();
  await mf.dispose();
  const summary = summarizeProfile(taken, 40);
  console.log(`${summary.samples} samples`);
  for (const f of summary.functions) console.log(`${(100 * f.share).toFixed(1).padStart(5)} %  ${f.name}`);
}

// --render: the docs section again from bench/gateway-cpu.json, without measuring.
if (args.includes("--render")) {
  const saved = JSON.parse(readFileSync(join(root, "bench/gateway-cpu.json"), "utf8"));
  writeDocsSection(join(root, "docs/gateway.md"), "gateway-cpu", markdown(saved.results, saved.machine, saved.repetitions));
  process.exit(0);
}

const upstreamServer = await startUpstream(UPSTREAM_PORT);
if (profileScenario !== null) {
  await profile(profileScenario);
  process.exit(0);
}

const results = await main();
await upstreamServer.close();
const machine = `${new Date().toISOString().slice(0, 16)}Z, load ${(await import("node:os")).loadavg()[0].toFixed(2)}`;
console.log(markdown(results, machine));
if (!noWrite && only === null && againstDir === null) {
  writeFileSync(join(root, "bench/gateway-cpu.json"), `${JSON.stringify({ machine, repetitions: REPETITIONS, results }, null, 2)}\n`);
  writeDocsSection(join(root, "docs/gateway.md"), "gateway-cpu", markdown(results, machine));
}
