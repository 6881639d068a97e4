// node bench/response-fields-cpu.js [--reps=N] [--n=N]: what the Response constructor costs with the
// gateway 429's 8 header fields against the bare Worker's 2 (issue 23's 429 floor is measured beside a
// Worker that answers a constant 429 with 2). One request builds N Responses in the isolate
// (response-fields/worker.js); the on-CPU time of workerd's JavaScript thread (lib/thread-cpu.js) is
// read around it. Interleaved repetitions; medians of the per-repetition difference, with its range.
// Prints only.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Miniflare } from "miniflare";

import { median, rotate } from "./lib/stats.js";
import { mostRun, threadNs, threadTimes, workerdPid } from "./lib/thread-cpu.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const args = process.argv.slice(2);
const REPETITIONS = Number(args.find((a) => a.startsWith("--reps="))?.slice(7) ?? 21);
const PER_REQUEST = Number(args.find((a) => a.startsWith("--n="))?.slice(4) ?? 20000);
const SUBJECTS = ["2", "8"];

const mf = new Miniflare({
  modules: [{ type: "ESModule", path: "/worker.js", contents: readFileSync(join(root, "bench/response-fields/worker.js"), "utf8") }],
  modulesRoot: "/",
  compatibilityDate: "2026-04-20",
});
await mf.ready;
const pid = workerdPid();
if (pid === null) throw new Error("workerd's process was not found (needs Linux /proc)");
const run = async (fields) => (await mf.dispatchFetch(`http://fields.bench/?fields=${fields}&n=${PER_REQUEST}`)).text();

const before = threadTimes(pid);
for (const fields of SUBJECTS) await run(fields);
const tid = mostRun(before, threadTimes(pid));
const samples = Object.fromEntries(SUBJECTS.map((fields) => [fields, []]));
for (let rep = 0; rep < REPETITIONS; rep++) {
  for (const fields of rotate(SUBJECTS, rep)) {
    const t0 = threadNs(pid, tid);
    await run(fields);
    samples[fields].push((threadNs(pid, tid) - t0) / PER_REQUEST / 1000);
  }
}
await mf.dispose();

const us = (n) => n.toFixed(2);
const added = samples[8].map((v, i) => v - samples[2][i]);
console.log(`new Response(body, { status: 429, headers: record }), ${PER_REQUEST} per request, ${REPETITIONS} interleaved repetitions (${new Date().toISOString().slice(0, 16)}Z, load ${(await import("node:os")).loadavg()[0].toFixed(2)}): on-CPU us each, medians.`);
console.log("");
console.log("| header fields | us per Response |");
console.log("|---|---|");
for (const fields of SUBJECTS) console.log(`| ${fields} | ${us(median(samples[fields]))} |`);
console.log("");
console.log(`8 fields add ${us(median(added))} us per Response (range ${us(Math.min(...added))} to ${us(Math.max(...added))}).`);
