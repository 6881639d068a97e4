// node bench/profile.js <scenario> [args]: a CPU profile of one bench isolate inside workerd, taken
// through its inspector while the scenario runs, summarized by function and by line of the bundle.
//
//   node bench/profile.js hono <route> [count]        figure 5's in-request loop on one Hono route
//   node bench/profile.js hot <subject> [ms]          figure 1, one hot key (mostly admitted)
//   node bench/profile.js uniform <subject> <keys> [ms]   figure 2, uniform over <keys> keys
//   node bench/profile.js durable <target> [rules] [ms]    figure 7 (target durable, echo, echo-write)
//
// Writes bench/.work/<scenario>-<name>.cpuprofile (open it in Chrome DevTools for the call tree).
// Run `bash scripts/build-wasm.sh` first when the core changed.
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { bundleWorker, WORK_DIR } from "./lib/bundle.js";
import { summarizeProfile } from "./lib/profile-summary.js";
import { runScript } from "./lib/entry.js";
import { Workerd } from "./lib/workerd.js";

const HOUR_MS = 3_600_000;
const DURABLE_OBJECTS = { SLUICE_DO: "SluiceDurableObject", BENCH_ECHO: "BenchEchoObject" };
const ADMIT_ALL = 1_000_000_000;

async function main() {
  const [scenario, name, ...rest] = process.argv.slice(2);
  if (!["hono", "hot", "uniform", "durable"].includes(scenario) || name === undefined) {
    console.error("usage: node bench/profile.js hono <route> [count] | hot <subject> [ms] | uniform <subject> <keys> [ms] | durable <target> [rules] [ms]");
    process.exit(2);
  }
  const script = await bundleWorker();
  const isolate = scenario === "hono" || scenario === "durable" ? scenario : "subject";
  const workerd = await Workerd.start(script, [isolate], { durableObjects: { durable: DURABLE_OBJECTS } });
  try {
    let work;
    if (scenario === "durable") {
      const params = { target: name, rules: Number(rest[0] ?? 1), shards: 1, spread: 0, inFlight: 1 };
      await workerd.call(isolate, "durable", { ...params, minMs: 200 });
      work = async () => {
        const r = await workerd.call(isolate, "durable", { ...params, minMs: Number(rest[1] ?? 2_000) });
        console.log(`${name}: ${Math.round((r.requests / r.ms) * 1000).toLocaleString("en")} requests/s while profiled`);
      };
    } else if (scenario === "hono") {
      const count = Number(rest[0] ?? 50_000);
      await workerd.call(isolate, "hono", { route: name, count: 2_000 });
      work = () => workerd.call(isolate, "hono", { route: name, count });
    } else {
      const keys = scenario === "hot" ? 1 : Number(rest[0]);
      const minMs = Number(rest[scenario === "hot" ? 0 : 1] ?? 2_000);
      await workerd.call(isolate, "create", { slot: "p", subject: name, limit: ADMIT_ALL, windowMs: HOUR_MS, keyCapacity: Math.max(keys, 1_000) });
      for (let from = 0; scenario === "uniform" && from < keys; from += 50_000) {
        await workerd.call(isolate, "populate", { slot: "p", from, to: Math.min(from + 50_000, keys) });
      }
      const dist = scenario === "hot" ? "hot" : "uniform";
      await workerd.call(isolate, "time", { slot: "p", keys, dist, minMs: 200 });
      work = async () => {
        const r = await workerd.call(isolate, "time", { slot: "p", keys, dist, minMs });
        console.log(`${name}: ${Math.round((r.decisions / r.ms) * 1000).toLocaleString("en")} decisions/s while profiled`);
      };
    }
    const profile = await workerd.cpuProfile(isolate, work);
    const out = join(WORK_DIR, `${scenario}-${name}.cpuprofile`);
    await writeFile(out, JSON.stringify(profile));
    report(summarizeProfile(profile), readFileSync(script, "utf8").split("\n"));
    console.log(`\nfull profile: ${out}`);
  } finally {
    await workerd.stop();
  }
}

function report(summary, bundleLines) {
  const pct = (share) => `${(share * 100).toFixed(1).padStart(5)} %`;
  console.log(`\n${summary.samples} samples; by function (self):`);
  for (const f of summary.functions) console.log(`${pct(f.share)}  ${f.name}`);
  console.log("\nby line of the bundle:");
  for (const l of summary.lines) {
    const text = l.url.endsWith("bench-worker.js") ? (bundleLines[l.line - 1] ?? "").trim().slice(0, 100) : "";
    console.log(`${pct(l.share)}  ${l.name.split(" ")[0]} :${l.line}  ${text}`);
  }
}

runScript(main);
