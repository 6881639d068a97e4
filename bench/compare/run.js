// node bench/compare/run.js <name>,<name>,... [--reps=7] [--ms=300] [--workloads=hot,raw,uniform100k,uniform1M]
//
// Builds of the core side by side inside workerd, each in an isolate of its own, repetitions
// interleaved as in bench/run.js: bench/.work/compare/<name>.wasm with its loader <name>-loader.js
// (make them with bench/compare/build-at.sh <commit> <name>). Prints each build's median decisions
// per second and its median per-repetition ratio to the first build named.
//
// Workloads: `hot`, `uniformN` (N = 100k or 1M keys) are figure 1 and 2's sluice fixed-window adapter
// exactly (the loader's check at Date.now(), keys and orders from bench/worker/workload.js); `raw` is
// the module alone: sluice_check on one key already in place, at a fixed time, no loader.
import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Miniflare } from "miniflare";
import { median } from "../lib/stats.js";
import { COMPATIBILITY_DATE } from "../lib/workerd.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "../..");
const dir = join(root, "bench/.work/compare");
const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback;
const names = process.argv[2]?.split(",");
if (names === undefined || names[0].startsWith("--")) {
  console.error("usage: node bench/compare/run.js <name>,<name>,... [--reps=7] [--ms=300] [--workloads=hot,raw,uniform100k,uniform1M]");
  process.exit(2);
}
const reps = Number(option("reps", 7));
const minMs = Number(option("ms", 300));
const workloads = option("workloads", "hot,raw,uniform100k,uniform1M").split(",");
const KEYS = { hot: 1, raw: 1, uniform100k: 100_000, uniform1M: 1_000_000 };

// One Worker per build: the bench adapter over that build's module and loader.
const worker = (name) => `
import wasmModule from "./${name}.wasm";
import { SluiceCore } from "./${name}-loader.js";
import { HOT_KEY, ORDER_LENGTH, arrivalOrder, keyList, keyOf, timeSync } from "../../worker/workload.js";
const slots = {};
function raw() {
  const { exports: e } = new WebAssembly.Instance(wasmModule, { env: { emscripten_notify_memory_growth() {} }, wasi_snapshot_preview1: { proc_exit() {} } });
  e._initialize(); e.sluice_init(1, 2, 3, 4); e.sluice_add_rule(0, 1e9, 3_600_000, 0, 1000, 0);
  const io = e.sluice_io_buffer(); const bytes = new Uint8Array(e.memory.buffer);
  for (let i = 0; i < HOT_KEY.length; i++) bytes[io + i] = HOT_KEY.charCodeAt(i);
  new Uint32Array(e.memory.buffer, io + 8192, 4).set([0, 0, HOT_KEY.length, 1]);
  // Flags 3: charge, and (from ABI 2) key 0 unchanged; ABI 1 reads any non-zero as charge.
  return (min) => { const start = performance.now(); let n = 0, now = start;
    do { for (let i = 0; i < 4096; i++) e.sluice_check(1, 1.7e12, 3); n += 4096; now = performance.now(); } while (now - start < min);
    return { decisions: n, ms: now - start }; };
}
export default { async fetch(request) {
  const p = new URL(request.url).searchParams; const workload = p.get("workload");
  if (p.get("op") === "setup") {
    const keys = Number(p.get("keys"));
    if (workload === "raw") { slots.raw = { run: raw() }; return Response.json({ ok: true }); }
    const core = SluiceCore.instantiate(wasmModule);
    const rule = core.addRule({ algorithm: "fixed-window", limit: 1e9, windowMs: 3_600_000, keyCapacity: Math.max(keys, 1000) });
    for (let i = 0; i < keys; i++) core.check(rule, keyOf(i), 1, Date.now());
    const decide = (key) => core.check(rule, key, 1, Date.now()).allowed;
    const list = keys === 1 ? [HOT_KEY] : keyList(keys);
    const order = keys === 1 ? new Uint32Array(ORDER_LENGTH) : arrivalOrder(keys, "uniform");
    const keyAt = (i) => list[i];
    slots[workload] = { run: (min) => timeSync(decide, keyAt, order, min) };
    return Response.json({ ok: true });
  }
  const { run } = slots[workload]; const min = Number(p.get("minMs"));
  run(min / 4);
  const result = run(min);
  delete slots[p.get("drop")];
  return Response.json(result);
} };`;

for (const name of names) writeFileSync(join(dir, `${name}-worker.js`), worker(name));
const mf = new Miniflare({
  workers: names.map((name) => ({
    name,
    modules: true,
    scriptPath: join(dir, `${name}-worker.js`),
    modulesRoot: root,
    modulesRules: [{ type: "ESModule", include: ["**/*.js"] }, { type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: COMPATIBILITY_DATE,
  })),
});
const call = async (name, query) => {
  const response = await (await mf.getWorker(name)).fetch(`http://compare/?${new URLSearchParams(query)}`);
  const text = await response.text();
  if (!response.ok) throw new Error(`${name}: ${text}`);
  return JSON.parse(text);
};
try {
  for (const workload of workloads) {
    for (const name of names) await call(name, { op: "setup", workload, keys: KEYS[workload] });
    const rates = Object.fromEntries(names.map((name) => [name, []]));
    for (let rep = 0; rep < reps; rep++) {
      const order = [...names.slice(rep % names.length), ...names.slice(0, rep % names.length)];
      for (const name of order) {
        const r = await call(name, { workload, minMs, drop: rep === reps - 1 ? workload : "" });
        rates[name].push((r.decisions / r.ms) * 1000);
      }
    }
    console.log(`${workload} (${reps} repetitions of at least ${minMs} ms)`);
    const base = rates[names[0]];
    for (const name of names) {
      const rate = median(rates[name]);
      const ratio = median(rates[name].map((r, i) => r / base[i]));
      const shown = rate >= 1e6 ? `${(rate / 1e6).toFixed(2)}M/s` : `${(rate / 1e3).toFixed(0)}k/s`;
      console.log(`  ${name.padEnd(14)} ${shown.padStart(10)}  x${ratio.toFixed(3)}`);
    }
  }
} finally {
  await mf.dispose();
}
