// node bench/gateway-loop-cpu.js [--reps=N] [--n=N] [--only=NAME,...] [--against=DIR]: what the gateway's own JavaScript costs per
// request, warm, beside the bare Worker's.
//
// bench/gateway-cpu.js measures whole top-level requests: on a loaded machine their on-CPU time
// swings by hundreds of microseconds between repetitions, more than the gateway's 429 adds. Here one
// request runs N requests through the gateway (or the bare Worker) inside the isolate
// (gateway-loop-cpu/driver.js), with gateway-cpu.js's configuration, upstream and headers, and the
// on-CPU time of workerd's JavaScript thread (lib/thread-cpu.js) is read around it: no HTTP
// exchange, no other isolate between two requests, so the figure is the JavaScript's, with its code
// and data warm in the CPU's caches. Interleaved repetitions; medians of the per-repetition
// difference, with its range. Prints only: the floors are gateway-cpu.js's.
//
// --against=DIR: a second loop Worker bundled from the tree at DIR (e.g. `git archive` of an earlier
// commit, with its wasm built), run as a third subject: the figures then also say what the working
// tree's gateway changes against it, per request (an A/B of a change, interleaved like the rest).
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Miniflare } from "miniflare";

import { ADMIN_TOKEN, UPSTREAM_TOKEN, bundleWorker, gatewayConfig } from "./gateway-cpu/setup.js";
import { startUpstream } from "./gateway-cpu/upstream.js";
import { median, rotate } from "./lib/stats.js";
import { mostRun, threadNs, threadTimes, workerdPid } from "./lib/thread-cpu.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const args = process.argv.slice(2);
const REPETITIONS = Number(args.find((a) => a.startsWith("--reps="))?.slice(7) ?? 9);
const PER_REQUEST = Number(args.find((a) => a.startsWith("--n="))?.slice(4) ?? 2000);
// --only=NAME,...: those scenarios only.
const only = args.find((a) => a.startsWith("--only="))?.slice(7).split(",") ?? null;
const againstDir = args.find((a) => a.startsWith("--against="))?.slice(10) ?? null;
// "least": bench/gateway-cpu/least.js, the least a Worker keeping the gateway's guarantees does.
const SUBJECTS = againstDir === null ? ["gateway", "bare", "least"] : ["gateway", "bare", "least", "against"];

// gateway-cpu.js's configuration, upstream (a Node server in this process) and headers.
const UPSTREAM_PORT = Number(args.find((a) => a.startsWith("--port="))?.slice(7) ?? 18300);
const UPSTREAM_ORIGIN = `http://127.0.0.1:${UPSTREAM_PORT}`;
const CONFIG = gatewayConfig(UPSTREAM_ORIGIN);
const SCENARIOS = [
  { name: "small", what: "a small JSON GET (masking and the body watchdog on)", gateway: "/api/small", bare: "/api/small", least: "/api/small" },
  { name: "small-unwatched", what: "the same, bodyTimeoutMs null", gateway: "/bare-api/small", bare: "/api/small", least: "/api/small" },
  { name: "limited", what: "a 429 beside the bare Worker's constant 429", gateway: "/limited/small", bare: "/limited", least: "/limited/small" },
].filter((s) => only === null || only.includes(s.name));

const upstreamServer = await startUpstream(UPSTREAM_PORT);
const esm = (path, contents) => ({ type: "ESModule", path, contents });
// The loop Worker of the tree at `dir`: "loop" for this one, "against" for --against's.
/** @param {string} dir */
async function loopWorker(dir) {
  return {
    name: dir === root ? "loop" : "against",
    modulesRoot: "/",
    modules: [
      esm("/worker.js", await bundleWorker(join(dir, "bench/gateway-loop-cpu/driver.js"))),
      esm("/bench-config.js", `export default ${JSON.stringify(CONFIG)};\n`),
      { type: "CompiledWasm", path: "/sluice.wasm", contents: readFileSync(join(dir, "wasm-bindings/sluice.wasm")) },
    ],
    compatibilityDate: "2026-04-20",
    bindings: { UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN, UPSTREAM_ORIGIN },
  };
}
const mf = new Miniflare({
  workers: await Promise.all([root, ...(againstDir === null ? [] : [resolve(againstDir)])].map(loopWorker)),
  handleRuntimeStdio(out, err) {
    out.resume();
    err.on("data", (chunk) => process.stderr.write(chunk));
  },
});
await mf.ready;
const pid = workerdPid();
if (pid === null) throw new Error("workerd's process was not found (needs Linux /proc)");
const worker = await mf.getWorker("loop");
const againstWorker = againstDir === null ? null : await mf.getWorker("against");
// "against" is the other tree's gateway, run by its own loop Worker.
const run = async (who, path, n) =>
  (await (who === "against" ? /** @type {any} */ (againstWorker) : worker).fetch(`http://loop.bench/?who=${who === "against" ? "gateway" : who}&path=${encodeURIComponent(path)}&n=${n}`)).text();
const pathOf = (s, who) => s[who === "against" ? "gateway" : who];

// The thread that runs the JavaScript: the one that ran most through a warm-up of every scenario.
const before = threadTimes(pid);
for (const s of SCENARIOS) for (const who of SUBJECTS) await run(who, pathOf(s, who), PER_REQUEST);
const tid = mostRun(before, threadTimes(pid));
const samples = Object.fromEntries(SCENARIOS.map((s) => [s.name, Object.fromEntries(SUBJECTS.map((who) => [who, []]))]));
for (let rep = 0; rep < REPETITIONS; rep++) {
  for (const s of rotate(SCENARIOS, rep)) {
    for (const who of rotate(SUBJECTS, rep)) {
      const t0 = threadNs(pid, tid);
      await run(who, pathOf(s, who), PER_REQUEST);
      samples[s.name][who].push((threadNs(pid, tid) - t0) / PER_REQUEST / 1000);
    }
  }
}
await mf.dispose();
await upstreamServer.close();

const us = (n) => n.toFixed(1);
console.log(`In-isolate loops of ${PER_REQUEST} requests, ${REPETITIONS} interleaved repetitions (${new Date().toISOString().slice(0, 16)}Z, load ${(await import("node:os")).loadavg()[0].toFixed(2)}): on-CPU us per request, medians.`);
console.log("");
console.log("| scenario | gateway | bare Worker | gateway adds (range) | least Worker | least adds (range) | gateway adds to least (range) |");
console.log("|---|---|---|---|---|---|---|");
for (const s of SCENARIOS) {
  const { gateway, bare, least } = samples[s.name];
  const diff = (a, b) => a.map((x, i) => x - b[i]);
  const cell = (d) => `${median(d) >= 0 ? "+" : ""}${us(median(d))} us (${us(Math.min(...d))} to ${us(Math.max(...d))})`;
  console.log(`| ${s.what} | ${us(median(gateway))} us | ${us(median(bare))} us | ${cell(diff(gateway, bare))} | ${us(median(least))} us | ${cell(diff(least, bare))} | ${cell(diff(gateway, least))} |`);
}
if (againstDir !== null) {
  console.log("");
  console.log(`Against the gateway of ${againstDir}:`);
  console.log("");
  console.log("| scenario | this tree | against | change (range) |");
  console.log("|---|---|---|---|");
  for (const s of SCENARIOS) {
    const { gateway, against } = samples[s.name];
    const change = gateway.map((g, i) => g - against[i]);
    const signed = (n) => `${n >= 0 ? "+" : ""}${us(n)}`;
    console.log(`| ${s.name} | ${us(median(gateway))} us | ${us(median(against))} us | ${signed(median(change))} us (${us(Math.min(...change))} to ${us(Math.max(...change))}) |`);
  }
}
