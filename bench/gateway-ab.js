// node bench/gateway-ab.js --base=COMMIT [--entry=FILE] [--path=PATH] [--rounds=N] [--port=N] [--swap]:
// what a change of the gateway's code costs or saves, per top-level request, against the code of
// COMMIT (printing only).
//
// gateway-cpu.js's figure of a small request swings by hundreds of microseconds between runs on a
// shared machine, more than most changes save; two of its runs, one per version, cannot tell them
// apart. Here both versions run in one Miniflare, beside the bare Worker (gateway-cpu/bare.js), in
// front of gateway-cpu.js's upstream: `entry` (default gateway-parts/proxy.js, the upstream call
// alone; gateway-cpu/gateway.js for the whole gateway) is bundled once from the working tree and once
// from COMMIT's tree (git archive into a temporary directory, with this tree's built wasm-bindings
// and package.json). Each round sends the three one top-level request in turn, in a rotated order,
// 1 ms apart, and reads the on-CPU time of workerd's JavaScript thread around each
// (lib/thread-cpu.js), as gateway-parts.js does; then batches of 20 back to back. Printed: each
// version over the bare Worker, and the new one less the old, as the median of the per-round
// differences with their quartiles. --swap sends the new version first in the rotation (run both
// ways: an order effect then shows as a change of sign).
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Miniflare } from "miniflare";

import { ADMIN_TOKEN, HEADERS, UPSTREAM_TOKEN, bundleWorker, gatewayConfig } from "./gateway-cpu/setup.js";
import { startUpstream } from "./gateway-cpu/upstream.js";
import { median, rotate } from "./lib/stats.js";
import { mostRun, threadNs, threadTimes, workerdPid } from "./lib/thread-cpu.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const args = process.argv.slice(2);
const option = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const BASE = option("base", null);
if (BASE === null) throw new Error("--base=COMMIT is required");
const ENTRY = option("entry", "bench/gateway-parts/proxy.js");
const PATH = option("path", "/api/small");
const ROUNDS = Number(option("rounds", 1500));
const PORT = Number(option("port", 18320)); // not gateway-cpu.js's 18300 nor gateway-parts.js's 18310
const BATCH = 20;
const CONFIG = gatewayConfig(`http://127.0.0.1:${PORT}`);

// COMMIT's tree, runnable: its sources, this tree's build of the wasm core and its package.json.
const baseTree = mkdtempSync(join(tmpdir(), "sluice-ab-"));
execFileSync("sh", ["-c", `git -C "${root}" archive "${BASE}" worker bench | tar -x -C "${baseTree}"`]);
cpSync(join(root, "wasm-bindings"), join(baseTree, "wasm-bindings"), { recursive: true });
cpSync(join(root, "package.json"), join(baseTree, "package.json"));

const esm = (path, contents) => ({ type: "ESModule", path, contents });
const bundled = async (name, file, bindings) => ({
  name,
  modulesRoot: "/",
  modules: [
    esm("/worker.js", await bundleWorker(file)),
    esm("/bench-config.js", `export default ${JSON.stringify(CONFIG)};\n`),
    { type: "CompiledWasm", path: "/sluice.wasm", contents: readFileSync(join(root, "wasm-bindings/sluice.wasm")) },
  ],
  compatibilityDate: "2026-04-20",
  bindings,
});

const pause = (ms) => new Promise((done) => setTimeout(done, ms));
const quantile = (values, q) => [...values].sort((a, b) => a - b)[Math.round(q * (values.length - 1))];

const upstream = await startUpstream(PORT);
const secrets = { UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN };
const mf = new Miniflare({
  workers: [
    await bundled("bare", join(root, "bench/gateway-cpu/bare.js"), { UPSTREAM_ORIGIN: `http://127.0.0.1:${PORT}` }),
    await bundled("old", join(baseTree, ENTRY), secrets),
    await bundled("new", join(root, ENTRY), secrets),
  ],
  handleRuntimeStdio(out, err) {
    out.resume();
    err.on("data", (chunk) => process.stderr.write(chunk));
  },
});
try {
  await mf.ready;
  const pid = workerdPid();
  if (pid === null) throw new Error("workerd's process was not found (needs Linux /proc)");
  const names = args.includes("--swap") ? ["bare", "new", "old"] : ["bare", "old", "new"];
  const workers = Object.fromEntries(await Promise.all(names.map(async (name) => [name, await mf.getWorker(name)])));
  const send = async (name) => {
    const response = await workers[name].fetch(`https://gateway.bench${name === "bare" ? "/api/small" : PATH}`, { headers: HEADERS });
    const bytes = (await response.arrayBuffer()).byteLength;
    if (response.status !== 200 || bytes === 0) throw new Error(`${name}: ${response.status}, ${bytes} bytes`);
  };
  // Warm-up, and the thread that runs the JavaScript: the one that ran most through it.
  const before = threadTimes(pid);
  for (let i = 0; i < 300; i++) for (const name of names) await send(name);
  const tid = mostRun(before, threadTimes(pid));
  const sample = async (rounds, batch) => {
    const samples = { bare: [], old: [], new: [] };
    for (let round = 0; round < rounds; round++) {
      for (const name of rotate(names, round)) {
        await pause(1);
        const t0 = threadNs(pid, tid);
        for (let i = 0; i < batch; i++) await send(name);
        await pause(1);
        samples[name].push((threadNs(pid, tid) - t0) / batch / 1000);
      }
    }
    return samples;
  };
  const report = (label, samples) => {
    const minus = (a, b) => samples[a].map((us, round) => us - samples[b][round]);
    const figure = (values) => `${Math.round(median(values))} us (${Math.round(quantile(values, 0.25))} to ${Math.round(quantile(values, 0.75))})`;
    console.log(`${label}: bare ${Math.round(median(samples.bare))} us; old over bare ${figure(minus("old", "bare"))}; new over bare ${figure(minus("new", "bare"))}; new - old ${figure(minus("new", "old"))}`);
  };
  console.log(`${ENTRY} ${PATH}, old = ${BASE}, load ${(await import("node:os")).loadavg()[0].toFixed(2)}`);
  report(`single requests (${ROUNDS} rounds)`, await sample(ROUNDS, 1));
  report(`back to back (batches of ${BATCH}, ${Math.ceil(ROUNDS / BATCH)} rounds)`, await sample(Math.ceil(ROUNDS / BATCH), BATCH));
} finally {
  await mf.dispose();
  await upstream.close();
  rmSync(baseTree, { recursive: true, force: true });
}
