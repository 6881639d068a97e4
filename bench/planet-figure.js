// node bench/planet-figure.js: the planet figure, every exact store in one run. Five isolates whose
// round trips to the keys' home (the Durable Object's, and Redis's) are 2, 40, 90, 160 and 250 ms
// (+-20 % per call, the geography seam: sluice/testing), each store with its defaults:
//   durable            createLimiter({ store: "durable" })
//   durable + lease    ... lease: true
//   regional           ... lease: { locationHint } (each region's isolate 10 ms from its regional
//                      object, which is the region's round trip from the home)
//   redis              store: "redis"'s chain, its fetch through the seam (a local redis-server
//                      behind the Upstash REST bridge)
//   redis + lease      the same with lease: true (leases over compare-and-set)
// The workload is the same for each: 10 keys, each asked by every isolate twice a second for 20 s
// (200 asked per key for a limit of 150 per hour, so the limit is reached at three quarters of the run),
// in 3 repetitions interleaved over the stores (each repetition its own keys); per region, every
// figure is the median over repetitions, with its range.
// Per store: admitted per key against the limit; per region: the share of decisions that waited on a
// round trip, added latency p50/p99 (all decisions; those that waited; those that did not, whose wait is
// the host's own), round trips per 1,000 decisions (and, for the regional tier, those that crossed the
// planet). Writes bench/planet-figure.json and renders README's planet rows and docs/stores.md's planet
// section from it (bench/lib/planet-figure-render.js); --render redoes only that, from the JSON;
// --quick (shorter) and --only=STORE,... (spaces left out: durable+lease) print and write nothing.
//
// Latency is the isolate's clock (1 ms steps) from the request to its decision. A decision that waited
// paid its region's simulated round trip (+-20 %) plus the host's wait; one that did not paid the host's
// wait only (CPU and scheduling on this shared machine), which is what the "not waited" column shows.
// The host's wait is also measured on its own: how late each isolate's timers between rounds fired.
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg, cpus } from "node:os";
import { dirname, resolve } from "node:path";
import { Miniflare } from "miniflare";
import { workerOptions } from "../test/js/helpers/worker.js";
import { startBridge } from "../test/js/helpers/redis-bridge.js";
import { startRedis } from "../test/js/helpers/redis-server.js";
import { renderPages } from "./lib/planet-figure-render.js";
import { threadTimes, workerdPid } from "./lib/thread-cpu.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const JSON_PATH = resolve(root, "bench/planet-figure.json");

const REGIONS = [
  { name: "home", rttMs: 2, hint: "enam" },
  { name: "near", rttMs: 40, hint: "wnam" },
  { name: "mid", rttMs: 90, hint: "weur" },
  { name: "far", rttMs: 160, hint: "apac" },
  { name: "antipode", rttMs: 250, hint: "oc" },
];
const JITTER = 0.2;
const ALL_STORES = ["durable", "durable + lease", "regional", "redis", "redis + lease"];
// --only=redis,redis+lease measures just those stores and prints them, writing nothing (as --quick).
const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length).split(",");
const STORES = only === undefined ? ALL_STORES : ALL_STORES.filter((s) => only.includes(s.replaceAll(" ", "")));
const quick = process.argv.includes("--quick") || only !== undefined;
const WORKLOAD = { algorithm: "fixed-window", limit: 150, windowSec: 3600, keys: 10, ticks: quick ? 10 : 40, gapMs: 500 };
const TOKEN = "planet-figure-token";
const REPETITIONS = quick ? 1 : 3;
// Per region, the figures reported as the median over repetitions, with their range.
const SPREAD = ["waitedShare", "p50Ms", "p99Ms", "waitedP50Ms", "waitedP99Ms", "localP50Ms", "localP99Ms", "hostLagP50Ms", "hostLagP99Ms", "roundTripsPer1000", "crossPlanetPer1000"];

function rotate(list, by) {
  return list.map((_, i) => list[(i + by) % list.length]);
}

function median(values) {
  const known = values.filter((v) => v !== null).sort((a, b) => a - b);
  if (known.length === 0) return null;
  const mid = known.length >> 1;
  return known.length % 2 === 1 ? known[mid] : round((known[mid - 1] + known[mid]) / 2, 4);
}

function range(values) {
  const known = values.filter((v) => v !== null);
  return known.length === 0 ? null : [Math.min(...known), Math.max(...known)];
}

// One store's repetitions as one figure: admissions and denials over every repetition (each its own
// keys), the rest as medians with their range (spread).
function combine(runs) {
  const first = runs[0];
  return {
    store: first.store,
    limit: first.limit,
    keys: first.keys,
    askedPerKey: first.askedPerKey,
    repetitions: runs.length,
    maxAdmittedPerKey: Math.max(...runs.map((r) => r.maxAdmittedPerKey)),
    minAdmittedPerKey: Math.min(...runs.map((r) => r.minAdmittedPerKey)),
    overAdmitted: runs.reduce((n, r) => n + r.overAdmitted, 0),
    workerdCpuUsPerDecision: median(runs.map((r) => r.workerdCpuUsPerDecision)),
    workerdCpuUsRange: range(runs.map((r) => r.workerdCpuUsPerDecision)),
    regions: first.regions.map((region, i) => {
      const all = runs.map((r) => r.regions[i]);
      const medians = Object.fromEntries(SPREAD.map((field) => [field, median(all.map((r) => r[field]))]));
      const spread = Object.fromEntries(SPREAD.map((field) => [field, range(all.map((r) => r[field]))]));
      return {
        region: region.region,
        rttMs: region.rttMs,
        decisions: all.reduce((n, r) => n + r.decisions, 0),
        admitted: all.reduce((n, r) => n + r.admitted, 0),
        fallbacks: all.reduce((n, r) => n + r.fallbacks, 0),
        ...medians,
        spread,
        ...(region.redisCounters === undefined ? {} : { redisCounters: all.map((r) => r.redisCounters) }),
      };
    }),
  };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function round(value, digits) {
  return value === null ? null : Math.round(value * 10 ** digits) / 10 ** digits;
}

// One region's figures from its decisions ([latencyMs, kind, fellBack]) and the calls its seams made.
function regionFigures(region, result, crossings) {
  const all = result.decisions.map(([ms]) => ms).sort((a, b) => a - b);
  const waited = result.decisions.filter(([, kind]) => kind === "W").map(([ms]) => ms).sort((a, b) => a - b);
  const local = result.decisions.filter(([, kind]) => kind !== "W").map(([ms]) => ms).sort((a, b) => a - b);
  const lags = [...result.lags].sort((a, b) => a - b);
  const decisions = all.length;
  const calls = result.calls.far + result.calls.near;
  return {
    region: region.name,
    rttMs: region.rttMs,
    decisions,
    admitted: Object.values(result.perKey).reduce((n, t) => n + t.admitted, 0),
    fallbacks: result.decisions.filter(([, , fellBack]) => fellBack === 1).length,
    waitedShare: round(waited.length / decisions, 4),
    p50Ms: percentile(all, 50),
    p99Ms: percentile(all, 99),
    waitedP50Ms: percentile(waited, 50),
    waitedP99Ms: percentile(waited, 99),
    localP50Ms: percentile(local, 50),
    localP99Ms: percentile(local, 99),
    hostLagP50Ms: percentile(lags, 50),
    hostLagP99Ms: percentile(lags, 99),
    roundTripsPer1000: round((1000 * calls) / decisions, 1),
    // Calls that crossed to the keys' home: the isolate's own far calls, and its regional object's.
    crossPlanetPer1000: round((1000 * (result.calls.far + crossings)) / decisions, 1),
    // The Redis store's own counts in this isolate (script calls refused, given up, ...).
    ...(result.redis === null ? {} : { redisCounters: result.redis }),
  };
}

async function startPlanet(redisUrl) {
  const workers = REGIONS.map((region, i) => ({
    name: `w${i}`,
    entry: "planetFigure",
    durableObjects: {
      SLUICE_DO: i === 0 ? { className: "TestSluiceDurableObject", useSQLite: true } : { className: "TestSluiceDurableObject", scriptName: "w0", useSQLite: true },
    },
    bindings: { REGION: region.name, RTT_MS: String(region.rttMs), JITTER: String(JITTER), SEED: String(i + 1), HINT: region.hint, REDIS_URL: redisUrl, REDIS_TOKEN: TOKEN },
  }));
  const mf = new Miniflare({ workers: await Promise.all(workers.map(workerOptions)) });
  await mf.ready;
  const fetchers = await Promise.all(workers.map((w) => mf.getWorker(w.name)));
  async function send(index, command) {
    const response = await fetchers[index].fetch("http://planet.test/", { method: "POST", body: JSON.stringify(command) });
    const body = JSON.parse(await response.text());
    if (body.error !== undefined) throw new Error(`isolate w${index}: ${body.error}`);
    return body.result;
  }
  return { send, dispose: () => mf.dispose() };
}

// The regional object of region i for the default store (name "sluice", one shard).
const regionalObject = (region) => `sluice/region/${region.hint}/sluice/1/0`;

async function measureStore(planet, store, rep) {
  const keys = Array.from({ length: WORKLOAD.keys }, (_, k) => `k-${k}`);
  // A limiter (so keys) of its own per repetition: each starts with every key's full limit.
  const limiter = { name: `planet-${store.replaceAll(" ", "")}-${rep}`, algorithm: WORKLOAD.algorithm, limit: WORKLOAD.limit, windowSec: WORKLOAD.windowSec, store };
  const regional = store === "regional";
  const homeCalls = (region) => planet.send(0, { op: "object", name: regionalObject(region), method: "homeCalls" });
  const before = regional ? await Promise.all(REGIONS.map(homeCalls)) : REGIONS.map(() => 0);
  const cpuBefore = workerdCpuNs();
  const results = await Promise.all(REGIONS.map((_, i) => planet.send(i, { op: "play", limiter, keys, ticks: WORKLOAD.ticks, gapMs: WORKLOAD.gapMs })));
  const cpuNs = workerdCpuNs() - cpuBefore;
  const after = regional ? await Promise.all(REGIONS.map(homeCalls)) : REGIONS.map(() => 0);
  const perKey = {};
  for (const { perKey: tallies } of results) for (const [key, t] of Object.entries(tallies)) perKey[key] = (perKey[key] ?? 0) + t.admitted;
  const admitted = Object.values(perKey);
  return {
    store,
    limit: WORKLOAD.limit,
    keys: keys.length,
    askedPerKey: WORKLOAD.ticks * REGIONS.length,
    maxAdmittedPerKey: Math.max(...admitted),
    minAdmittedPerKey: Math.min(...admitted),
    overAdmitted: admitted.reduce((n, a) => n + Math.max(0, a - WORKLOAD.limit), 0),
    // On-CPU time of the whole workerd process (every isolate and object), per decision: sluice's own
    // cost, which the host's load does not inflate as it does the latencies.
    workerdCpuUsPerDecision: Number.isNaN(cpuNs) ? null : round(cpuNs / 1000 / results.reduce((n, r) => n + r.decisions.length, 0), 0),
    regions: REGIONS.map((region, i) => regionFigures(region, results[i], after[i] - before[i])),
  };
}

// Nanoseconds every thread of the workerd process has run (NaN when it cannot be read).
function workerdCpuNs() {
  const pid = workerdPid();
  if (pid === null) return Number.NaN;
  return [...threadTimes(pid).values()].reduce((a, b) => a + b, 0);
}

// A fixed window of an hour: the run must not cross an hour's start, or a key may rightly get two limits.
async function awayFromHourStart(runMs) {
  const intoHour = Date.now() % 3_600_000;
  if (intoHour + runMs < 3_600_000) return;
  const waitMs = 3_600_000 - intoHour + 1000;
  console.log(`waiting ${Math.round(waitMs / 1000)} s for the next hour (a run must stay in one window)`);
  await new Promise((r) => setTimeout(r, waitMs));
}

async function measure() {
  const redis = await startRedis();
  const bridge = await startBridge({ redisPort: redis.port, token: TOKEN });
  const loadBefore = loadavg();
  const planet = await startPlanet(bridge.url);
  const figure = {
    date: new Date().toISOString(),
    quick,
    machine: { nproc: cpus().length, loadBefore: loadBefore.map((l) => round(l, 2)) },
    regions: REGIONS,
    jitter: JITTER,
    nearRttMs: 10,
    workload: WORKLOAD,
    repetitions: REPETITIONS,
    stores: [],
  };
  try {
    for (const region of REGIONS) await planet.send(0, { op: "object", name: regionalObject(region), method: "setKnob", args: ["homeRttMs", region.rttMs] });
    // Repetitions interleaved, each visiting every store in an order rotated per repetition.
    const runs = Object.fromEntries(STORES.map((store) => [store, []]));
    for (let rep = 0; rep < REPETITIONS; rep++) {
      for (const store of rotate(STORES, rep)) {
        await awayFromHourStart(WORKLOAD.ticks * WORKLOAD.gapMs + 15_000);
        const started = Date.now();
        runs[store].push(await measureStore(planet, store, rep));
        console.log(`repetition ${rep + 1}, ${store}: ${Math.round((Date.now() - started) / 1000)} s`);
      }
    }
    figure.stores = STORES.map((store) => combine(runs[store]));
  } finally {
    await planet.dispose();
    await bridge.stop();
    await redis.stop();
  }
  figure.machine.loadAfter = loadavg().map((l) => round(l, 2));
  return figure;
}

function print(figure) {
  for (const s of figure.stores) {
    if (s.regions[0].redisCounters !== undefined) console.log(JSON.stringify(s.regions.map((r) => r.redisCounters)));
    console.log(`\n${s.store}: ${s.minAdmittedPerKey}-${s.maxAdmittedPerKey} admitted per key (limit ${s.limit}, ${s.askedPerKey} asked), ${s.overAdmitted} over; workerd on-CPU ${s.workerdCpuUsPerDecision} us per decision; fallbacks ${s.regions.map((r) => r.fallbacks).join("/")}`);
    console.log("region    rtt  waited   p50  p99  waited p50/p99  not waited p50/p99  host lag p50/p99  round trips/1000 (across the planet)");
    for (const r of s.regions) {
      console.log(
        `${r.region.padEnd(9)} ${String(r.rttMs).padStart(3)} ${`${(100 * r.waitedShare).toFixed(1)}%`.padStart(6)} ${String(r.p50Ms).padStart(5)} ${String(r.p99Ms).padStart(4)}  ${`${r.waitedP50Ms}/${r.waitedP99Ms}`.padStart(14)}  ${`${r.localP50Ms}/${r.localP99Ms}`.padStart(18)}  ${`${r.hostLagP50Ms}/${r.hostLagP99Ms}`.padStart(16)}  ${r.roundTripsPer1000} (${r.crossPlanetPer1000})`,
      );
    }
  }
}

const figure = process.argv.includes("--render") ? JSON.parse(readFileSync(JSON_PATH, "utf8")) : await measure();
print(figure);
if (!figure.quick) {
  if (!process.argv.includes("--render")) writeFileSync(JSON_PATH, `${JSON.stringify(figure, null, 2)}\n`);
  for (const [page, text] of Object.entries(renderPages(figure, (path) => readFileSync(resolve(root, path), "utf8")))) writeFileSync(resolve(root, page), text);
  console.log("\nwrote bench/planet-figure.json, README.md's planet rows and docs/stores.md's planet section");
}
