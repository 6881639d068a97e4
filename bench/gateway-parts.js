// node bench/gateway-parts.js [--rounds=N] [--port=N] [--no-write]: where a small
// proxied request's CPU goes, step by step, at the top level (issue 23's "+150 us" floor).
//
// gateway-cpu.js compares the shipped gateway with the bare Worker; gateway-loop-cpu.js runs both in
// a loop inside one request, where the gateway adds far less. This script builds the gateway up from
// the bare Worker in Workers of their own, each one step more than the one before, in one Miniflare in
// front of gateway-cpu.js's upstream (a Node server in this process):
//   bare      bench/gateway-cpu/bare.js: fetch() and return the response as it is;
//   read      gateway-parts/read.js: the body read whole into JavaScript and answered as new bytes,
//             the least any gateway that masks a body does (nothing of sluice in it);
//   proxy     gateway-parts/proxy.js: the gateway's upstream call (worker/gateway/proxy.js) alone;
//   no rules  the shipped gateway on a route whose one rule is in bypass mode (nothing counted);
//   gateway   the shipped gateway on gateway-cpu.js's /api route (one rule, memory store);
//   logged    the same, logging its line through console.log as shipped (gateway-cpu.js drops it).
// Every step is sent one top-level request in turn, 1 ms apart (the thread then runs other work, as a
// Worker's thread does between requests), and the on-CPU time of workerd's JavaScript thread is read
// around each (lib/thread-cpu.js). A step's figure is the median of its requests; what it adds is the
// median of its per-round difference from the step before (each round sends every step one request),
// with the 25th and 75th percentiles of that difference: single requests are noisy on a shared
// machine, so the rounds are many. The same number of requests is then sent in batches of 20 of one
// step back to back (as gateway-cpu.js's batches are), for what each step costs over the bare Worker
// when the thread does nothing else between its requests. Writes bench/gateway-parts.json and its section of docs/gateway.md.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Miniflare } from "miniflare";

import { ADMIN_TOKEN, HEADERS, UPSTREAM_TOKEN, bundleWorker, gatewayConfig } from "./gateway-cpu/setup.js";
import { startUpstream } from "./gateway-cpu/upstream.js";
import { writeDocsSection } from "./lib/docs-section.js";
import { median, rotate } from "./lib/stats.js";
import { mostRun, threadNs, threadTimes, workerdPid } from "./lib/thread-cpu.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const args = process.argv.slice(2);
const option = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const ROUNDS = Number(option("rounds", 1200));
const PAUSE_MS = 1;
// Back to back: batches of this many requests of one step.
const BATCH = 20;
const noWrite = args.includes("--no-write");
const UPSTREAM_PORT = Number(option("port", 18310)); // not gateway-cpu.js's 18300: the two may run at once
const UPSTREAM_ORIGIN = `http://127.0.0.1:${UPSTREAM_PORT}`;

// gateway-cpu.js's configuration, plus a route like /api whose rule is in bypass mode.
const CONFIG = gatewayConfig(UPSTREAM_ORIGIN);
const api = CONFIG.routes.find((route) => route.prefix === "/api");
CONFIG.routes.push({ ...api, prefix: "/no-rules", rules: api.rules.map((rule) => ({ ...rule, name: `${rule.name}-bypassed`, mode: "bypass" })) });

// Each step: its Worker, the path it is sent, what it is.
const STEPS = [
  { name: "bare", worker: "bare", path: "/api/small", what: "the bare Worker: fetch() and return the response as it is" },
  { name: "read", worker: "read", path: "/api/small", what: "+ the body read whole into JavaScript, answered as new bytes (no sluice code)" },
  { name: "proxy", worker: "proxy", path: "/api/small", what: "the gateway's upstream call alone (proxy.js: credential, one deadline for the head and the whole read, masking, header filtering)" },
  { name: "no-rules", worker: "gateway", path: "/no-rules/small", what: "the shipped gateway, its route's one rule in bypass mode (routing, canonical path, log record)" },
  { name: "gateway", worker: "gateway", path: "/api/small", what: "the shipped gateway: + one rule checked in the memory store, its rate-limit fields" },
  { name: "logged", worker: "logged", path: "/api/small", what: "+ its log line through console.log, as shipped (gateway-cpu.js's gateway logs nowhere)" },
];

async function start() {
  const esm = (path, contents) => ({ type: "ESModule", path, contents });
  const bundled = async (name, file, bindings) => ({
    name,
    modulesRoot: "/",
    modules: [
      esm("/worker.js", await bundleWorker(join(root, "bench", file))),
      esm("/bench-config.js", `export default ${JSON.stringify(CONFIG)};\n`),
      { type: "CompiledWasm", path: "/sluice.wasm", contents: readFileSync(join(root, "wasm-bindings/sluice.wasm")) },
    ],
    compatibilityDate: "2026-04-20",
    bindings,
  });
  const secrets = { UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN };
  return new Miniflare({
    workers: [
      await bundled("bare", "gateway-cpu/bare.js", { UPSTREAM_ORIGIN }),
      await bundled("read", "gateway-parts/read.js", { UPSTREAM_ORIGIN }),
      await bundled("proxy", "gateway-parts/proxy.js", secrets),
      await bundled("gateway", "gateway-cpu/gateway.js", secrets),
      await bundled("logged", "gateway-parts/logged.js", secrets),
    ],
    // The log lines of `logged`: read and dropped.
    handleRuntimeStdio(out, err) {
      out.resume();
      err.on("data", (chunk) => process.stderr.write(chunk));
    },
  });
}

const pause = (ms) => (ms > 0 ? new Promise((done) => setTimeout(done, ms)) : Promise.resolve());
const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.round(q * (sorted.length - 1))];
};

async function measure() {
  const upstream = await startUpstream(UPSTREAM_PORT);
  const mf = await start();
  await mf.ready;
  try {
    return await measureOn(mf);
  } finally {
    await mf.dispose();
    await upstream.close();
  }
}

async function measureOn(mf) {
  const pid = workerdPid();
  if (pid === null) throw new Error("workerd's process was not found (needs Linux /proc)");
  const workers = {};
  for (const step of STEPS) workers[step.worker] ??= await mf.getWorker(step.worker);
  const send = async (step) => {
    const response = await workers[step.worker].fetch(`https://gateway.bench${step.path}`, { headers: HEADERS });
    const bytes = (await response.arrayBuffer()).byteLength;
    if (response.status !== 200 || bytes === 0) throw new Error(`${step.name}: ${response.status}, ${bytes} bytes`);
  };
  // Warm-up, and the thread that runs the JavaScript: the one that ran most through it.
  const before = threadTimes(pid);
  for (let i = 0; i < 200; i++) for (const step of STEPS) await send(step);
  const tid = mostRun(before, threadTimes(pid));
  // Each step's per-request samples, one per round: `batch` requests back to back (their mean), after
  // and before a pause of `pauseMs` (what the thread still does for a request after its response,
  // closing it, then counts for it, not for the next step's).
  const sample = async (rounds, batch, pauseMs) => {
    const samples = Object.fromEntries(STEPS.map((step) => [step.name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const step of rotate(STEPS, round)) {
        await pause(pauseMs);
        const t0 = threadNs(pid, tid);
        for (let i = 0; i < batch; i++) await send(step);
        await pause(pauseMs);
        samples[step.name].push((threadNs(pid, tid) - t0) / batch / 1000);
      }
    }
    return samples;
  };
  const samples = await sample(ROUNDS, 1, PAUSE_MS);
  const backToBack = await sample(Math.ceil(ROUNDS / BATCH), BATCH, PAUSE_MS);
  return STEPS.map((step, i) => {
    const own = samples[step.name];
    const result = { name: step.name, what: step.what, us: median(own) };
    if (i > 0) {
      const previous = samples[STEPS[i - 1].name];
      const added = own.map((us, round) => us - previous[round]);
      result.addedUs = median(added);
      result.addedQuartiles = [quantile(added, 0.25), quantile(added, 0.75)];
      result.overBareUs = median(own.map((us, round) => us - samples.bare[round]));
      result.backToBackOverBareUs = median(backToBack[step.name].map((us, round) => us - backToBack.bare[round]));
    }
    return result;
  });
}

const fmt = (n) => Math.round(n).toLocaleString("en");
const signed = (n) => `${n >= 0 ? "+" : ""}${fmt(n)}`;

function markdown(results, machine, rounds, pauseMs) {
  const lines = [
    `Measured by \`node bench/gateway-parts.js\` (${machine}): on-CPU time of workerd's JavaScript thread per top-level request of a small JSON GET, ${fmt(rounds)} rounds, each sending every step one request in turn, ${pauseMs} ms apart; medians, and what each step adds to the one above it (median of the per-round difference, with its 25th to 75th percentile); the last column is as many requests sent in batches of ${BATCH} of one step, back to back.`,
    "",
    "| step | per request | adds to the step above (quartiles) | over the bare Worker | over the bare Worker, back to back |",
    "|---|---|---|---|---|",
  ];
  for (const r of results) {
    if (r.addedUs === undefined) lines.push(`| ${r.what} | ${fmt(r.us)} us | | | |`);
    else lines.push(`| ${r.what} | ${fmt(r.us)} us | ${signed(r.addedUs)} us (${signed(r.addedQuartiles[0])} to ${signed(r.addedQuartiles[1])}) | ${signed(r.overBareUs)} us | ${signed(r.backToBackOverBareUs)} us |`);
  }
  return lines.join("\n");
}

if (args.includes("--render")) {
  const saved = JSON.parse(readFileSync(join(root, "bench/gateway-parts.json"), "utf8"));
  writeDocsSection(join(root, "docs/gateway.md"), "gateway-parts", markdown(saved.results, saved.machine, saved.rounds, saved.pauseMs));
  process.exit(0);
}

const results = await measure();
const machine = `${new Date().toISOString().slice(0, 16)}Z, load ${(await import("node:os")).loadavg()[0].toFixed(2)}`;
const text = markdown(results, machine, ROUNDS, PAUSE_MS);
console.log(text);
if (!noWrite) {
  writeFileSync(join(root, "bench/gateway-parts.json"), `${JSON.stringify({ machine, rounds: ROUNDS, pauseMs: PAUSE_MS, results }, null, 2)}\n`);
  writeDocsSection(join(root, "docs/gateway.md"), "gateway-parts", text);
}
