// npm run bench [-- --quick]: sluice and its peers side by side inside workerd, in one run.
//
// Every limiter runs in an isolate of its own (miniflare `workers`), driven from here request by
// request; repetitions are interleaved (each one visits every subject, in a rotated order) and every
// figure is reported as the median over repetitions and as the median of per-repetition ratios
// against the plain-JS fixed window. Writes bench/results.json, bench/results.md, bench/results.svg.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { bundleWorker, SLUICE_HONO } from "./lib/bundle.js";
import { describeMachine, loadAverageNow } from "./lib/machine.js";
import { renderMarkdown } from "./lib/report-md.js";
import { renderSvg } from "./lib/report-svg.js";
import { median, ratios, rotate, summary } from "./lib/stats.js";
import { runScript } from "./lib/entry.js";
import { Workerd } from "./lib/workerd.js";
import { BASELINE, SUBJECT_INFO } from "./worker/subject-info.js";
import { evaluateFloors } from "./lib/floors.js";
import { mostRun, threadNs, threadTimes, workerdPid } from "./lib/thread-cpu.js";
import { BENCH_PAGE, README, withBenchResults, withBenchSummary } from "./lib/readme-section.js";
import { REDIS_ISOLATES, figureRedis, startRedisForBench } from "./lib/figure-redis.js";
import { writeRedisSection } from "./lib/redis-docs-section.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const quick = process.argv.includes("--quick");
const skipBuild = process.argv.includes("--no-build");
// --render rewrites the reports (results.md, results.svg, docs/bench.md's section) from bench/results.json,
// measuring nothing: for working on the reports.
// --only=hono,durable (figure names as in results.json: wasm, hotKey, keys, burst, hono, durable, concurrency, redis, leases) runs
// just those figures and prints them, leaving bench/results.* alone: for working on one figure.
const onlyArg = process.argv.find((a) => a.startsWith("--only="));
const only = onlyArg === undefined ? null : new Set(onlyArg.slice("--only=".length).split(","));
const wanted = (figure) => only === null || only.has(figure);

// Quick keeps every figure (1M keys included, since the floors are stated there) with fewer and
// shorter repetitions.
const PLAN = quick
  ? { reps: 3, minMs: 100, sizes: [100_000, 1_000_000], burst: 200_000, honoCount: 4_000, fetchCount: 400, instances: 50, freshIsolates: 2 }
  : { reps: 7, minMs: 300, sizes: [100_000, 1_000_000], burst: 200_000, honoCount: 20_000, fetchCount: 2_000, instances: 200, freshIsolates: 4 };

const HOUR_MS = 3_600_000;
const ADMIT_ALL = 1_000_000_000; // a limit no run reaches: every decision admitted
const DENY_MOST = 10; // the first ten admitted, then denied for the rest of the hour

// Figures 1-4 compare these (the sliding counter and token bucket against their plain-JS twins).
const COMPARED = [
  "harness-only",
  "plain-fixed-window",
  "plain-sliding-counter",
  "plain-token-bucket",
  "sluice-fixed-window",
  "sluice-sliding-counter",
  "sluice-token-bucket",
  "rate-limiter-flexible",
  "hono-rate-limiter-store",
  "express-rate-limit-store",
];
// The harness decides nothing and holds nothing: it has a rate, not a memory or a burst figure.
const LIMITERS = COMPARED.filter((s) => s !== "harness-only");
// Measured for bytes per key only, in the sluice-fixed-window isolate. The sliding log keeps `limit`
// timestamps per key: at limit 10, 1M keys (71 MB) do not fit the module's 64 MiB of linear memory,
// so it is measured at 500,000 keys.
const MEMORY_ONLY = ["sluice-leaky-bucket", "sluice-gcra", "sluice-sliding-log"];
const SLIDING_LOG_LIMIT = 10;
const SLIDING_LOG_KEYS = 500_000;

// workerd counts at most 10,000 timers per request; rate-limiter-flexible sets one per new key.
const populateChunk = (subject) => (subject === "rate-limiter-flexible" ? 9_000 : 50_000);

const isolateOf = (subject) => `s-${subject}`;
const HONO_HOST = "hono.bench";
const log = (...parts) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}]`, ...parts);

async function main() {
  if (process.argv.includes("--render")) {
    await writeReports(JSON.parse(readFileSync(join(root, "bench/results.json"), "utf8")));
    return;
  }
  const started = Date.now();
  const machine = describeMachine();
  log(quick ? "quick run" : "full run", `on ${machine.nproc} x ${machine.cpuModel}, load ${machine.loadAverageAtStart?.join(" ")}`);
  if (!skipBuild) execFileSync("bash", [join(root, "scripts/build-wasm.sh")], { stdio: ["ignore", "inherit", "inherit"] });
  const script = await bundleWorker();

  const fresh = Array.from({ length: PLAN.freshIsolates }, (_, i) => `fresh-${i}`);
  // BENCH_DO_DIR puts the objects' SQLite files elsewhere (a tmpfs, say: figure 7 then shows the
  // object's own work rather than the local disk's sync, which Cloudflare does not pay on the object's thread).
  const durableObjectsPersist = process.env.BENCH_DO_DIR ? join(process.env.BENCH_DO_DIR, `sluice-bench-${process.pid}`) : undefined;
  if (durableObjectsPersist) log(`Durable Object storage in ${durableObjectsPersist}`);
  // Figure 9 runs against a local redis-server behind the Upstash REST bridge, started for the run.
  const redis = wanted("redis") ? await startRedisForBench() : null;
  const names = [...COMPARED.map(isolateOf), "hono", DURABLE_ISOLATE, ...fresh, ...(redis === null ? [] : REDIS_ISOLATES)];
  const workerd = await Workerd.start(script, names, {
    durableObjectsPersist,
    routes: { hono: [`${HONO_HOST}/*`] },
    durableObjects: { [DURABLE_ISOLATE]: DURABLE_OBJECTS },
    bindings: redis?.bindings ?? {},
  }).catch(async (error) => {
    await redis?.stop();
    throw error;
  });
  const pid = workerdPid();
  timing = pid === null ? { kind: "wall", pid: null } : { kind: "thread", pid };
  log(`figures 1-2 timed by ${timing.kind === "thread" ? `the on-CPU time of the isolate's workerd thread (pid ${pid})` : "the isolate's clock"}`);
  const results = { machine, quick, plan: PLAN, baseline: BASELINE, subjects: SUBJECT_INFO, timing: timing.kind, figures: {} };
  try {
    if (wanted("wasm")) results.figures.wasm = await figureWasm(workerd, fresh);
    if (wanted("hotKey")) results.figures.hotKey = await figureHotKey(workerd);
    if (wanted("keys")) {
      const { throughput, memory } = await figureKeys(workerd);
      results.figures.manyKeys = throughput;
      results.figures.bytesPerKey = memory;
    }
    if (wanted("burst")) results.figures.newKeysInOneRequest = await figureBurst(workerd);
    if (wanted("hono")) results.figures.hono = await figureHono(workerd);
    if (wanted("durable")) results.figures.durableObject = await figureDurableObject(workerd);
    if (wanted("concurrency")) results.figures.concurrency = await figureConcurrency(workerd);
    if (redis !== null) results.figures.redis = await figureRedis(workerd, redis.bridge, { plan: PLAN, log, durableIsolate: DURABLE_ISOLATE });
  } finally {
    await workerd.stop();
    await redis?.stop();
    if (durableObjectsPersist) rmSync(durableObjectsPersist, { recursive: true, force: true });
  }
  // Figure 10 in a workerd of its own (the object's isolate and four that share it): its isolates
  // and objects neither share a process with the other figures' nor inherit their heaps.
  if (wanted("leases")) {
    const startLeasesWorkerd = () =>
      Workerd.start(script, [DURABLE_ISOLATE, ...LEASE_ISOLATES], {
        durableObjects: {
          [DURABLE_ISOLATE]: DURABLE_OBJECTS,
          ...Object.fromEntries(LEASE_ISOLATES.map((name) => [name, { SLUICE_DO: { className: "SluiceDurableObject", scriptName: DURABLE_ISOLATE } }])),
        },
      });
    const leasesWorkerd = { current: await startLeasesWorkerd(), restart: startLeasesWorkerd };
    try {
      results.figures.leases = await figureLeases(leasesWorkerd);
    } finally {
      await leasesWorkerd.current.stop();
    }
  }
  results.timingMisses = timing.misses ?? 0;
  if (only !== null) {
    console.log(JSON.stringify({ timing: results.timing, timingMisses: results.timingMisses }));
    console.log(JSON.stringify(results.figures, null, 2));
    return;
  }
  results.machine.loadAverageAtEnd = loadAverageNow();
  results.elapsedSeconds = Math.round((Date.now() - started) / 1000);
  await writeFile(join(root, "bench/results.json"), `${JSON.stringify(results, null, 2)}\n`);
  await writeReports(results);
  log(`done in ${results.elapsedSeconds} s: bench/results.json and its reports`);
}

// results.md, results.svg and, for a full run, docs/bench.md's results section, all from `results`; then
// the floors on the console. `node bench/run.js --render` redoes them from bench/results.json.
async function writeReports(results) {
  results.floors = evaluateFloors(results);
  const markdown = renderMarkdown(results);
  await writeFile(join(root, "bench/results.md"), markdown);
  await writeFile(join(root, "bench/results.svg"), renderSvg(results));
  // The docs show full runs only; a quick run's figures stay in bench/results.*.
  if (!results.quick) {
    const page = join(root, BENCH_PAGE);
    await writeFile(page, withBenchResults(readFileSync(page, "utf8"), markdown));
    const readme = join(root, README);
    await writeFile(readme, withBenchSummary(readFileSync(readme, "utf8"), results));
    writeRedisSection(join(root, "docs/redis.md"), results);
  }
  log(`wrote bench/results.md, bench/results.svg${results.quick ? "" : `, ${BENCH_PAGE}, ${README}'s summary`}`);
  for (const floor of results.floors) log(`${floor.met === null ? "PENDING" : floor.met ? "MET    " : "NOT MET"} ${floor.floor}: ${floor.detail}`);
}

// Runs `measure(subject, rep)` for every subject in every repetition, in rotated order, and
// returns subject -> samples.
async function interleave(subjects, reps, measure) {
  const samples = Object.fromEntries(subjects.map((s) => [s, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const subject of rotate(subjects, rep)) samples[subject].push(await measure(subject, rep));
  }
  return samples;
}

// Figure rows: per subject, the median rate, the median per-repetition ratio to the baseline, and its
// own cost per decision: its time per decision minus the no-op limiter's in the same repetition (the
// loop, the clock and the key string cost everyone the same), in ns, median and range.
function rateRows(samples) {
  const base = samples[BASELINE];
  const noop = samples[NOOP];
  return Object.fromEntries(
    Object.entries(samples).map(([subject, values]) => [
      subject,
      {
        decisionsPerSecond: summary(values),
        ratio: base === undefined ? null : median(ratios(values, base)),
        ownNanoseconds: noop === undefined || subject === NOOP ? null : summary(values.map((rate, i) => 1e9 / rate - 1e9 / noop[i])),
        samples: values,
      },
    ]),
  );
}
const NOOP = "harness-only";

const rate = (r) => (r.decisions / r.ms) * 1000;

// How figures 1 and 2 time a loop: "thread" (the on-CPU time of the workerd thread that runs the
// isolate) where Linux's /proc says, else "wall" (the isolate's own clock). Set by main().
let timing = { kind: "wall", pid: null };
const SPIN_MS = 30;

// One timed measurement of decisions per second in `isolate`: a warm-up request, one untimed request
// of unrelated hot code (so V8 installs the code it optimised during the warm-up, and so we learn
// which thread runs the isolate: the one that ran the spin), then the timed loop, timed by that
// thread's on-CPU time.
async function decisionsPerSecond(workerd, isolate, params) {
  await workerd.call(isolate, "time", { ...params, phase: "warm" });
  let tid = null;
  if (timing.kind === "thread") {
    const before = threadTimes(timing.pid);
    await workerd.call(isolate, "spin", { ms: SPIN_MS });
    tid = mostRun(before, threadTimes(timing.pid));
  } else {
    await workerd.call(isolate, "spin", { ms: SPIN_MS });
  }
  const startNs = tid === null ? 0 : threadNs(timing.pid, tid);
  const r = await workerd.call(isolate, "time", { ...params, phase: "timed" });
  if (tid === null) return rate(r);
  const cpuMs = (threadNs(timing.pid, tid) - startNs) / 1e6;
  // (On a loaded machine the thread runs a fraction of the loop's wall time: that is the point.) A
  // thread that did not run at all was not the one running the loop: count it and use the clock.
  if (!(cpuMs > 0)) {
    timing.misses = (timing.misses ?? 0) + 1;
    return rate(r);
  }
  return (r.decisions / cpuMs) * 1000;
}

// Figure 1: one key, mostly admitted and mostly denied.
async function figureHotKey(workerd) {
  log("figure 1: one hot key");
  for (const subject of COMPARED) {
    for (const [slot, limit] of [["hot-admit", ADMIT_ALL], ["hot-deny", DENY_MOST]]) {
      await workerd.call(isolateOf(subject), "create", { slot, subject, limit, windowMs: HOUR_MS, keyCapacity: 1_000 });
    }
  }
  const figure = {};
  // Each decision builds its key string, as a Worker gets a new header string per request; the last
  // mode passes the same string object every time (see KEY_STRINGS in worker/workload.js).
  const modes = [
    ["mostly admitted", "hot-admit", "fresh"],
    ["mostly denied", "hot-deny", "fresh"],
    ["mostly admitted, one string object reused", "hot-admit", "reused"],
  ];
  for (const [mode, slot, strings] of modes) {
    const samples = await interleave(COMPARED, PLAN.reps, (subject) =>
      decisionsPerSecond(workerd, isolateOf(subject), { slot, keys: 1, dist: "hot", strings, minMs: PLAN.minMs }),
    );
    figure[mode] = rateRows(samples);
  }
  for (const subject of COMPARED) {
    for (const slot of ["hot-admit", "hot-deny"]) await workerd.call(isolateOf(subject), "drop", { slot });
  }
  return figure;
}

// Figures 2 and 3: per key count, every limiter filled with that many keys (its heap measured before
// and after), then timed over them in uniform and Zipf order.
async function figureKeys(workerd) {
  const throughput = {};
  const memory = {};
  for (const keys of PLAN.sizes) {
    log(`figures 2-3: ${keys.toLocaleString("en")} keys: filling`);
    const held = {};
    for (const subject of COMPARED) {
      if (LIMITERS.includes(subject)) held[subject] = await fill(workerd, isolateOf(subject), subject, "keys", keys);
      else await workerd.call(isolateOf(subject), "create", { slot: "keys", subject, limit: ADMIT_ALL, windowMs: HOUR_MS, keyCapacity: keys });
    }
    memory[keys] = held;
    // Key strings built per decision (as a Worker's headers are), then uniform once more over strings
    // built once and reused (see KEY_STRINGS in worker/workload.js).
    for (const [dist, strings, column] of [["uniform", "fresh", "uniform"], ["zipf", "fresh", "zipf"], ["uniform", "reused", "uniform, strings reused"]]) {
      log(`figure 2: ${keys.toLocaleString("en")} keys, ${column}`);
      const samples = await interleave(COMPARED, PLAN.reps, (subject) =>
        decisionsPerSecond(workerd, isolateOf(subject), { slot: "keys", keys, dist, strings, minMs: PLAN.minMs }),
      );
      throughput[`${keys} ${column}`] = rateRows(samples);
    }
    for (const subject of COMPARED) await workerd.call(isolateOf(subject), "drop", { slot: "keys", workloads: 1 });
  }
  // The algorithms that have no peer here, for bytes per key only.
  const largest = PLAN.sizes[PLAN.sizes.length - 1];
  for (const subject of MEMORY_ONLY) {
    log(`figure 3: ${subject} at ${largest.toLocaleString("en")} keys`);
    const isLog = subject === "sluice-sliding-log";
    const keys = isLog ? Math.min(largest, SLIDING_LOG_KEYS) : largest;
    memory[largest][subject] = await fill(workerd, isolateOf("sluice-fixed-window"), subject, "memory", keys, isLog ? SLIDING_LOG_LIMIT : ADMIT_ALL);
    await workerd.call(isolateOf("sluice-fixed-window"), "drop", { slot: "memory" });
  }
  for (const [keys, bySubject] of Object.entries(memory)) {
    const base = bySubject[BASELINE]?.bytesPerKey;
    for (const row of Object.values(bySubject)) row.ratio = base ? row.bytesPerKey / base : null;
    memory[keys] = bySubject;
  }
  return { throughput, memory };
}

// Creates `subject` in `slot` with room for `keys` keys, inserts them, and reports what it costs:
// the growth of the isolate's V8 heap (after forced collections) plus, for sluice, its linear memory.
async function fill(workerd, isolate, subject, slot, keys, limit = ADMIT_ALL) {
  await workerd.call(isolate, "drop", { slot, workloads: 1 });
  const heapBefore = await workerd.heapUsed(isolate);
  await workerd.call(isolate, "create", { slot, subject, limit, windowMs: HOUR_MS, keyCapacity: keys });
  const chunk = populateChunk(subject);
  for (let from = 0; from < keys; from += chunk) {
    await workerd.call(isolate, "populate", { slot, from, to: Math.min(from + chunk, keys) });
  }
  const heapAfter = await workerd.heapUsed(isolate);
  const hold = await workerd.call(isolate, "hold", { slot });
  const heapBytes = heapAfter - heapBefore;
  const linearBytes = hold.linearMemoryBytes ?? 0;
  return {
    keysInserted: keys,
    keysHeld: hold.keysHeld,
    heapBytes,
    linearMemoryBytes: hold.linearMemoryBytes,
    tableBytes: hold.table?.memoryBytes ?? null,
    evictions: hold.table?.evictions ?? null,
    bytesPerKey: (heapBytes + linearBytes) / keys,
  };
}

// Figure 4: new keys in one request, until the first error.
async function figureBurst(workerd) {
  log(`figure 4: ${PLAN.burst.toLocaleString("en")} new keys in one request`);
  const figure = {};
  for (const subject of LIMITERS) {
    const r = await workerd.call(isolateOf(subject), "burst", { subject, count: PLAN.burst });
    figure[subject] = { attempted: PLAN.burst, inserted: r.inserted, failure: r.failure, ms: r.ms };
  }
  return figure;
}

// Figure 5: a Hono route behind each middleware against the bare route.
async function figureHono(workerd) {
  const { routes, sluiceStatus } = await workerd.call("hono", "honoRoutes");
  log(`figure 5: Hono routes ${routes.join(", ")}${sluiceStatus ? ` (sluice ${sluiceStatus})` : ""}`);
  const inside = await interleave(routes, PLAN.reps, async (route) => {
    const r = await workerd.call("hono", "hono", { route, count: PLAN.honoCount });
    if (r.ok !== r.count) throw new Error(`route ${route}: ${r.count - r.ok} requests were not answered 200`);
    return (r.ms * 1000) / r.count;
  });
  const through = await interleave(routes, PLAN.reps, (route) => requestsPerSecond(workerd, route));
  const rows = {};
  for (const route of routes) {
    const added = inside[route].map((us, i) => us - inside.bare[i]);
    rows[route] = {
      microsecondsPerRequest: summary(inside[route]),
      addedMicroseconds: route === "bare" ? null : summary(added),
      requestsPerSecond: summary(through[route]),
      requestsPerSecondRatioToBare: median(ratios(through[route], through.bare)),
    };
  }
  return { routes: rows, sluice: sluiceStatus ?? "measured", count: PLAN.honoCount, fetchCount: PLAN.fetchCount };
}

// Requests per second through dispatchFetch, 8 in flight, from 1,000 client addresses.
async function requestsPerSecond(workerd, route) {
  const inFlight = 8;
  let next = 0;
  const start = performance.now();
  const lane = async () => {
    while (next < PLAN.fetchCount) {
      const i = next++;
      const response = await workerd.dispatchFetch(`http://${HONO_HOST}/app/${route}`, {
        headers: { "cf-connecting-ip": `10.1.${(i >> 8) & 3}.${i & 255}` },
      });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`route ${route} answered ${response.status}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return (PLAN.fetchCount / (performance.now() - start)) * 1000;
}

// Figure 6: the module's size, and instantiation in fresh isolates (first instance and the mean).
async function figureWasm(workerd, fresh) {
  log("figure 6: sluice.wasm size and instantiation");
  const bytes = readFileSync(join(root, "wasm-bindings/sluice.wasm"));
  const cold = [];
  const mean = [];
  for (const isolate of fresh) {
    const r = await workerd.call(isolate, "instantiate", { count: PLAN.instances });
    cold.push(r.firstMs);
    mean.push((r.ms * 1000) / r.count);
  }
  return {
    rawBytes: bytes.length,
    gzipBytes: gzipSync(bytes, { level: 9 }).length,
    firstInstanceMs: summary(cold),
    microsecondsPerInstance: summary(mean),
    instancesPerIsolate: PLAN.instances,
    note: "an instance = instantiate + one rule (1,000 keys) + one check; the first one in a fresh isolate is timed with workerd's 1 ms clock",
  };
}

// Figure 7: the Durable Object store. Each case sends requests of `rules` checks from one isolate
// through createDurableStore, `inFlight` at a time; the echo object (the same RPC, answered without
// storage or core) is the round trip's floor, and the memory store the same checks without one.
const DURABLE_CASES = {
  "echo, 1 check per request": { target: "echo", rules: 1, shards: 1, inFlight: 1 },
  "echo, 1 check per request, 8 in flight": { target: "echo", rules: 1, shards: 1, inFlight: 8 },
  "echo writing 1 row, 1 check per request": { target: "echo-write", rules: 1, shards: 1, inFlight: 1 },
  "echo writing 4 rows, 4 checks per request": { target: "echo-write", rules: 4, shards: 1, inFlight: 1 },
  "durable, 1 check per request": { target: "durable", rules: 1, shards: 1, inFlight: 1 },
  "durable, 4 checks per request": { target: "durable", rules: 4, shards: 1, inFlight: 1 },
  "durable, 1 check per request, 8 in flight": { target: "durable", rules: 1, shards: 1, inFlight: 8 },
  "durable, 1 check per request, 64 in flight": { target: "durable", rules: 1, shards: 1, inFlight: 64 },
  "durable without storage, 1 check per request, 8 in flight": { target: "durable-memory", rules: 1, shards: 1, inFlight: 8 },
  "durable, 4 checks per request, 8 in flight": { target: "durable", rules: 4, shards: 1, inFlight: 8 },
  "durable, 4 checks on 4 keys, 4 shards": { target: "durable", rules: 4, shards: 4, spread: true, inFlight: 1 },
  "memory, 1 check per request": { target: "memory", rules: 1, shards: 1, inFlight: 1 },
  "memory, 4 checks per request": { target: "memory", rules: 4, shards: 1, inFlight: 1 },
};
const DURABLE_FLOOR = "echo, 1 check per request";
const DURABLE_ISOLATE = "durable";
const DURABLE_OBJECTS = { SLUICE_DO: "SluiceDurableObject", BENCH_ECHO: "BenchEchoObject", BENCH_MEMORY_OBJECT: "BenchMemoryObject" };

// Figure 8: the concurrency middleware's added cost per request, memory and durable, as a ratio to the
// same Hono route without it (in the isolate that has the Durable Object bound). Each request is an
// acquisition before the handler and a release when its body has been read.
async function figureConcurrency(workerd) {
  log("figure 8: the concurrency middleware");
  const { routes } = await workerd.call(DURABLE_ISOLATE, "concurrencyRoutes");
  const runs = await interleave(routes, PLAN.reps, (route) => workerd.call(DURABLE_ISOLATE, "concurrency", { route, minMs: PLAN.minMs }));
  const perRequest = (r) => (r.ms * 1000) / r.requests;
  const bare = runs.bare.map(perRequest);
  const rows = {};
  for (const route of routes) {
    const us = runs[route].map(perRequest);
    rows[route] = {
      microsecondsPerRequest: summary(us),
      addedMicroseconds: route === "bare" ? null : summary(us.map((u, i) => u - bare[i])),
      ratioToBare: median(ratios(us, bare)),
    };
  }
  return { routes: rows, note: "times are µs per request through app.fetch inside one isolate, body read to the end; ratioToBare = time with the middleware / time without" };
}

async function figureDurableObject(workerd) {
  log("figure 7: the Durable Object store");
  const cases = Object.keys(DURABLE_CASES);
  const runs = await interleave(cases, PLAN.reps, (name) => {
    const { spread = false, ...c } = DURABLE_CASES[name];
    return workerd.call(DURABLE_ISOLATE, "durable", { ...c, spread: spread ? 1 : 0, minMs: PLAN.minMs });
  });
  const requestRate = (r) => (r.requests / r.ms) * 1000;
  const floor = runs[DURABLE_FLOOR].map(requestRate);
  const rows = {};
  for (const name of cases) {
    const { target, rules, shards, inFlight, spread = false } = DURABLE_CASES[name];
    const rates = runs[name].map(requestRate);
    rows[name] = {
      target,
      checksPerRequest: rules,
      shards,
      spreadKeys: spread,
      inFlight,
      requestsPerSecond: summary(rates),
      decisionsPerSecond: summary(runs[name].map((r) => (r.decisions / r.ms) * 1000)),
      microsecondsPerRequest: summary(runs[name].map((r) => (r.ms * 1000 * inFlight) / r.requests)),
      roundTripsPerRequest: target === "memory" ? 0 : median(runs[name].map((r) => r.roundTrips / r.requests)),
      requestsRatioToEcho: median(ratios(rates, floor)),
      // The objects' own counts (storageStats): the share of calls answered from reserved units, and
      // SQLite rows written per 1,000 calls.
      ...(target === "durable"
        ? {
            callsFromReservedShare: median(runs[name].map((r) => r.storage.callsFromReserved / Math.max(1, r.storage.calls))),
            rowsWrittenPer1000Calls: median(runs[name].map((r) => (r.storage.rowsWritten / Math.max(1, r.storage.calls)) * 1000)),
          }
        : {}),
    };
  }
  return {
    measured: true,
    rows,
    note:
      "local workerd runs the object in the same process as the isolate: a round trip costs serialization and scheduling, " +
      "no network, so these rates are a ceiling for one object, not what an object in another location answers; " +
      `the objects' SQLite files are on ${process.env.BENCH_DO_DIR ? `BENCH_DO_DIR (${process.env.BENCH_DO_DIR})` : "the local disk, whose sync each commit waits for"}; ` +
      "the 1,000 client keys take turns, so each is warm at the object after its first calls and then mostly decided from units it reserved in storage (docs/stores.md)",
  };
}

// Figure 10: one rule (LEASE_LIMITS per minute, fixed window) shared by four isolates, each running
// LEASE_IN_FLIGHT request loops at once, through store "memory", "durable" and "durable" with leases,
// on one hot key and on a Zipf mix of 1,000 keys; and the Zipf mix's rule as a sliding log through
// "durable" and leased. Admissions are counted per key and minute (the sliding log's per key over the run, which
// lasts seconds) and compared with the limit: memory counts per isolate (up to 4 x the limit), durable
// and leased exactly.
const LEASE_ISOLATES = ["lease-0", "lease-1", "lease-2", "lease-3"];
// Per key and minute. The hot key's limit is out of reach of one repetition (about 0.6 s), so its
// decisions/s compare the stores deciding, not a pre-filter denying what is over a spent limit: with
// 10,000, the durable store (about 16,000 admissions/s with reservations) spent a minute's limit in
// the first 0.6 s and the rest were denials in the isolate. The Zipf mix keeps 10,000: its hottest keys
// reach it, and the per-minute counts check that no store admits past it.
const LEASE_LIMITS = Object.freeze({ hot: 10_000_000, zipf: 10_000 });
const LEASE_IN_FLIGHT = 8;
const LEASE_TARGETS = ["memory", "durable", "leased"];
// The sliding log lends too (lease.hpp): its lent units are entries at the lease's end. It is measured
// through the durable store and leased only (memory is per isolate whatever the algorithm), on the
// Zipf mix only: a log holds 4 bytes per unit of its limit per key, so the hot key's limit out of reach
// of a repetition (10M) is out of reach of the object's memory too (OUT_OF_MEMORY at addRule).
const LEASE_LOG_TARGETS = ["durable", "leased"];
const LOG_LABEL = " (sliding log)";
// The Zipf mix is timed warm: a Worker serving 1,000 keys has seen each of them before. Its tail keys
// take a lease only once their rate at an isolate asks for one, and at the object's pace (one call per
// cold request) that takes seconds: the first warm-ups, as long as the timed run, timed mostly the
// object serving cold keys. The warm-up is untimed and the same for every store.
const LEASE_ZIPF_WARM_UP_MS = 3000;

// figureLeases runs on `workerd.current`. workerd (1.20260426.1) has died of a segmentation fault under
// this figure's load (twice in about 20 runs of it, not diagnosed): a repetition whose process died
// is run again, at most twice, on a new process, and the figure says how many died.
async function figureLeases(workerd) {
  log("figure 10: one rule over 4 isolates: memory, durable, leased");
  let processesDied = 0;
  const callAll = async (params) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await Promise.all(LEASE_ISOLATES.map((isolate, i) => workerd.current.call(isolate, "leases", { ...params, isolate: i })));
      } catch (error) {
        const died = /fetch failed|other side closed|ECONNREFUSED|ECONNRESET/.test(`${error?.message} ${error?.cause?.message}`);
        if (!died || attempt >= 2) throw error;
        processesDied++;
        log(`figure 10: workerd died (${error?.cause?.message ?? error?.message}); the repetition runs again on a new process`);
        await workerd.current.stop().catch(() => {});
        workerd.current = await workerd.restart();
      }
    }
  };
  const keysOf = (dist) => (dist === "hot" ? "one hot key" : "Zipf mix of 1,000 keys");
  const cases = [
    ...LEASE_TARGETS.flatMap((target) => ["hot", "zipf"].map((dist) => `${target}, ${keysOf(dist)}`)),
    ...LEASE_LOG_TARGETS.map((target) => `${target}${LOG_LABEL}, ${keysOf("zipf")}`),
  ];
  const caseOf = (name) => {
    const label = name.slice(0, name.indexOf(","));
    const log = label.endsWith(LOG_LABEL);
    return {
      target: log ? label.slice(0, -LOG_LABEL.length) : label,
      algorithm: log ? "sliding-log" : "fixed-window",
      dist: name.includes("hot key") ? "hot" : "zipf",
    };
  };
  let run = 0;
  const started = Date.now();
  const runs = await interleave(cases, PLAN.reps, async (name) => {
    const { target, dist, algorithm } = caseOf(name);
    const runId = `${started}-${run++}`;
    const parts = await callAll({ target, dist, algorithm, limit: LEASE_LIMITS[dist], windowMs: 60_000, runId, inFlight: LEASE_IN_FLIGHT, minMs: PLAN.minMs * 2, warmUpMs: LEASE_ZIPF_WARM_UP_MS });
    const decisions = parts.reduce((sum, p) => sum + p.decisions, 0);
    const ms = Math.max(...parts.map((p) => p.ms));
    const admitted = {};
    const latency = {};
    for (const p of parts) {
      for (const [slot, n] of Object.entries(p.admitted)) admitted[slot] = (admitted[slot] ?? 0) + n;
      for (const [bucket, n] of Object.entries(p.latency)) latency[bucket] = (latency[bucket] ?? 0) + n;
    }
    return {
      decisionsPerSecond: (decisions / ms) * 1000,
      admittedPerSecond: (parts.reduce((sum, p) => sum + p.admittedTimed, 0) / ms) * 1000,
      roundTripsPer1000: (parts.reduce((sum, p) => sum + p.roundTrips, 0) / decisions) * 1000,
      p50Ms: percentileOf(latency, 0.5),
      p99Ms: percentileOf(latency, 0.99),
      mostAdmittedPerKeyAndMinute: Math.max(0, ...Object.values(admitted)),
    };
  });
  const rows = {};
  for (const name of cases) {
    const r = runs[name];
    const most = Math.max(...r.map((x) => x.mostAdmittedPerKeyAndMinute));
    rows[name] = {
      ...caseOf(name),
      decisionsPerSecond: summary(r.map((x) => x.decisionsPerSecond)),
      admittedPerSecond: summary(r.map((x) => x.admittedPerSecond)),
      roundTripsPer1000Decisions: median(r.map((x) => x.roundTripsPer1000)),
      p50AddedMs: median(r.map((x) => x.p50Ms)),
      p99AddedMs: median(r.map((x) => x.p99Ms)),
      mostAdmittedPerKeyAndMinute: most,
      limit: LEASE_LIMITS[caseOf(name).dist],
      overAdmitted: Math.max(0, most - LEASE_LIMITS[caseOf(name).dist]),
    };
  }
  for (const dist of ["one hot key", "Zipf mix of 1,000 keys"]) {
    for (const label of ["", LOG_LABEL]) {
      if (runs[`leased${label}, ${dist}`] === undefined) continue;
      const leasedRuns = runs[`leased${label}, ${dist}`];
      const durableRuns = runs[`durable${label}, ${dist}`];
      const leased = rows[`leased${label}, ${dist}`];
      leased.decisionsRatioToDurable = median(ratios(leasedRuns.map((x) => x.decisionsPerSecond), durableRuns.map((x) => x.decisionsPerSecond)));
      // Denials from the pre-filter are cheap for every store; admissions alone are the stricter ratio.
      leased.admittedRatioToDurable = median(ratios(leasedRuns.map((x) => x.admittedPerSecond), durableRuns.map((x) => x.admittedPerSecond)));
    }
  }
  return {
    rows,
    processesDied,
    isolates: LEASE_ISOLATES.length,
    inFlightPerIsolate: LEASE_IN_FLIGHT,
    limitsPerMinute: LEASE_LIMITS,
    note:
      "four isolates of a workerd process of their own (beside the object's), each with 8 request loops, the Zipf mix timed after an untimed warm-up of " +
      `${LEASE_ZIPF_WARM_UP_MS / 1000} s (every store alike), so that its keys are as warm as in a Worker that has been serving them; ` +
      "once a key has admitted its limit, the rest of its minute is denials (from the chain's pre-filter, in the isolate): admitted/s shows the admissions alone; " +
      "the object's commits go to a local disk; " +
      "latency is per decision on workerd's local clock (whole milliseconds); admissions are counted per key and minute over every isolate" +
      (processesDied === 0 ? "" : `; workerd died of a segmentation fault ${processesDied} time(s) during this figure, and those repetitions were run again on a new process`),
  };
}

// The value below which `share` of the decisions fall, from a histogram of whole milliseconds.
function percentileOf(histogram, share) {
  const buckets = Object.entries(histogram).map(([ms, n]) => [Number(ms), n]).sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((sum, [, n]) => sum + n, 0);
  let seen = 0;
  for (const [ms, n] of buckets) {
    seen += n;
    if (seen >= share * total) return ms;
  }
  return null;
}

runScript(main);
