// node bench/planet-leases.js [--quick]: leases on a planet. Five isolates whose round trips to the
// Durable Object's home are 2, 40, 90, 160 and 250 ms (+-20 % per call, the geography seam:
// sluice/testing), through the leases' planet fixture (test/js/fixtures/planet-leases/). Per region
// and store (durable without leases, durable + lease, and the regional tier, where each region's
// isolate is 10 ms from a regional object that is the region's round trip from the home):
//   - warm keys: 20 keys per isolate at 1 request a second each, on the object's real clock (so the
//     run crosses a minute's window boundary): the share of decisions that waited on a round trip
//     (all, and past each key's warm-up: its first 2 decisions), p50/p99 added latency past the
//     warm-up, round trips per 1,000 decisions;
//   - a hot key at 2,000 and at 10,000 per minute asked for 1.6 times its limit from all regions at
//     once (one window of the object's: its clock stands still): admitted against the limit, the
//     share that waited, p50/p99 added latency, round trips per 1,000 decisions, and for the
//     regional tier the calls that crossed from each regional object to the home.
// Latency is reported two ways. "Store wait" is on the geography seam's clock: a decision taken from a
// lease or the pre-filter awaited no call (0 ms), one that waited on a round trip is counted at the
// seam's longest round trip for its region (RTT + 20 % jitter); it says what the store's distance adds,
// whatever the host's load. "Wall" is the isolate's clock (1 ms steps) from the request to its
// decision, waiting for a CPU included (on a loaded host, most of it). The on-CPU cost of a decision
// taken from a lease is measured apart (bench/local-decision-cpu.js: process.cpuUsage in Node).
// Writes bench/planet-leases.json and renders its section of docs/leases.md (--quick: shorter runs,
// writes nothing; --only=warm: the warm-keys runs with leases, every lending algorithm, --only=hot: the
// hot keys, --only=regional-warm, --only=cpu: that part again, replacing its namesakes in the last
// full run's JSON, --only=warm --algorithm=NAME: one algorithm's warm run; --render: the doc section
// from the JSON as it is).
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, resolve } from "node:path";

import { REGIONS, rule, startPlanet } from "../test/js/fixtures/planet-leases/harness.js";
import { measureLocalDecisionCpu } from "./local-decision-cpu.js";
import { renderLeasesSection } from "./planet-leases-doc.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const quick = process.argv.includes("--quick");
const WARM_TICKS = quick ? 20 : 75; // 1 s apart: 75 s crosses a minute's boundary
const DURABLE_TICKS = quick ? 5 : 10;
const WARM_KEYS = Array.from({ length: 20 }, (_, i) => `user-${i}`);
const WARM_UP = 2;
const HINTS = { home: "enam", near: "wnam", mid: "weur", far: "apac", antipode: "oc" };
const NEAR_RTT_MS = 10;
const JITTER = 0.2; // the harness's default: each call's round trip is RTT +-20 %
// The warm-keys runs with leases, one per lending algorithm (the leaky bucket lends as the token
// bucket does). The sliding log keeps a ring of `limit` entries per key: its limit is 1,000 (each key
// is asked 300 a minute), the others' 100,000.
const WARM_LEASE_RUNS = [
  { name: "bench-lease", algorithm: "sliding-counter" },
  { name: "bench-lease-fixed", algorithm: "fixed-window" },
  { name: "bench-lease-log", algorithm: "sliding-log", limit: 1000 },
  { name: "bench-lease-bucket", algorithm: "token-bucket" },
  { name: "bench-lease-gcra", algorithm: "gcra" },
];

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

// One region's figures from its per-key tallies (kinds and latencies in the order requests were sent).
// A decision that waited on a round trip is counted, on the seam's clock, at the region's longest one.
function figures(perKey, leases, warmUp, rttMs) {
  let decisions = 0;
  let waited = 0;
  let steady = 0;
  let steadyWaited = 0;
  let admitted = 0;
  const latencies = [];
  const storeWaits = [];
  const longestTripMs = Math.round(rttMs * (1 + JITTER));
  for (const t of Object.values(perKey)) {
    admitted += t.admitted;
    t.kinds.forEach((kind, i) => {
      decisions++;
      if (kind === "W") waited++;
      if (i < warmUp) return;
      steady++;
      if (kind === "W") steadyWaited++;
      latencies.push(t.latencies[i]);
      storeWaits.push(kind === "W" ? longestTripMs : 0);
    });
  }
  latencies.sort((a, b) => a - b);
  storeWaits.sort((a, b) => a - b);
  const roundTrips = leases === null ? waited : leases.roundTrips;
  return {
    decisions,
    admitted,
    waitedShare: round(waited / decisions),
    waitedShareAfterWarmUp: round(steadyWaited / Math.max(1, steady)),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    storeWaitP50Ms: percentile(storeWaits, 50),
    storeWaitP99Ms: percentile(storeWaits, 99),
    roundTripsPer1000: round((1000 * roundTrips) / decisions, 1),
    refills: leases?.refills ?? 0,
    leasesAhead: leases?.leasesAhead ?? 0,
  };
}

function round(value, digits = 4) {
  return Math.round(value * 10 ** digits) / 10 ** digits;
}

// A region's round trip to the home: through its regional object (10 ms away) in the regional tier.
function tripMs(i, regional) {
  return regional ? NEAR_RTT_MS + REGIONS[i].rttMs : REGIONS[i].rttMs;
}

async function regionalPlanet() {
  return startPlanet({ regions: REGIONS.map((r) => ({ name: r.name, rttMs: NEAR_RTT_MS, hint: HINTS[r.name] })) });
}

async function placeRegionals(planet, name) {
  for (const region of REGIONS) {
    await planet.send(0, { op: "object", name: `${name}/region/${HINTS[region.name]}/${name}/1/0`, method: "setKnob", args: ["homeRttMs", region.rttMs] });
  }
}

async function homeCrossings(planet, name) {
  const crossings = {};
  for (const region of REGIONS) {
    crossings[region.name] = await planet.send(0, { op: "object", name: `${name}/region/${HINTS[region.name]}/${name}/1/0`, method: "homeCalls" });
  }
  return crossings;
}

async function warm(planet, store, ticks, regional, algorithm = "sliding-counter", limit = 100_000) {
  const r = rule({ name: store.name, algorithm, limit, windowMs: 60_000 });
  if (regional) await placeRegionals(planet, store.name);
  const started = Date.now();
  const results = await planet.playEverywhere({ store, rule: r, keys: WARM_KEYS, ticks, gapMs: 1000, latencies: true });
  const perRegion = Object.fromEntries(results.map(({ perKey, leases }, i) => [planet.regions[i].name, figures(perKey, leases, WARM_UP, tripMs(i, regional))]));
  return { store: store.name, algorithm, limit, date: new Date(started).toISOString(), ticks, ms: Date.now() - started, perRegion, ...(regional ? { homeCrossings: await homeCrossings(planet, store.name) } : {}) };
}

async function hot(planet, store, limit, regional) {
  const r = rule({ name: store.name, algorithm: "fixed-window", limit, windowMs: 60_000 });
  await planet.fixObjectClock(store.name);
  if (regional) await placeRegionals(planet, store.name);
  const ticks = Math.ceil((1.6 * limit) / REGIONS.length);
  const results = await planet.playEverywhere({ store, rule: r, keys: ["hot"], ticks, gapMs: 10, latencies: true });
  const perRegion = Object.fromEntries(results.map(({ perKey, leases }, i) => [planet.regions[i].name, figures(perKey, leases, 0, tripMs(i, regional))]));
  const admitted = Object.values(perRegion).reduce((n, f) => n + f.admitted, 0);
  return { store: store.name, limit, date: new Date().toISOString(), asked: ticks * REGIONS.length, admitted, overLimit: Math.max(0, admitted - limit), shareOfLimit: round(admitted / limit), perRegion, ...(regional ? { homeCrossings: await homeCrossings(planet, store.name) } : {}) };
}

const only = process.argv.find((arg) => arg.startsWith("--only="))?.slice("--only=".length);
const jsonPath = `${root}/bench/planet-leases.json`;
const docPath = `${root}/docs/leases.md`;

// A summary per run and region: waited share (after warm-up), store wait and wall p50/p99, round trips per 1,000.
function print(run) {
  const head = run.limit === undefined || run.asked === undefined ? `${run.store} (${run.algorithm ?? "fixed-window"}, warm keys)` : `${run.store}: ${run.admitted} of ${run.limit} admitted`;
  console.log(head, run.homeCrossings === undefined ? "" : `home crossings ${JSON.stringify(run.homeCrossings)}`);
  for (const [region, f] of Object.entries(run.perRegion)) {
    console.log(
      `  ${region.padEnd(9)} waited ${(100 * f.waitedShare).toFixed(2)} % (after warm-up ${(100 * f.waitedShareAfterWarmUp).toFixed(2)} %)  store wait p50/p99 ${f.storeWaitP50Ms}/${f.storeWaitP99Ms} ms  wall p50/p99 ${f.p50Ms}/${f.p99Ms} ms  ${f.roundTripsPer1000} round trips per 1,000  ${f.leasesAhead} lent ahead`,
    );
  }
}

async function onPlanet(start, body) {
  const planet = await start();
  try {
    return await body(planet);
  } finally {
    await planet.dispose();
  }
}

// --algorithm=NAME (with --only=warm): that algorithm's run only.
const onlyAlgorithm = process.argv.find((arg) => arg.startsWith("--algorithm="))?.slice("--algorithm=".length);

async function warmLeaseRuns(planet) {
  const runs = [];
  for (const { name, algorithm, limit } of WARM_LEASE_RUNS) {
    if (onlyAlgorithm === undefined || onlyAlgorithm === algorithm) runs.push(await warm(planet, { name, lease: {} }, WARM_TICKS, false, algorithm, limit));
  }
  return runs;
}

async function hotRuns(planet, regional) {
  const runs = [];
  const prefix = regional ? "bench-regional-hot" : "bench-hot";
  for (const limit of [2000, 10_000]) runs.push(await hot(planet, { name: `${prefix}-${limit}`, lease: {}, ...(regional ? { regional: true } : {}) }, limit, regional));
  return runs;
}

// Replaces the runs of the same store in the last full run's JSON (a part run again), and notes when.
function replaceInLast(part, runs) {
  const last = JSON.parse(readFileSync(jsonPath, "utf8"));
  for (const run of runs.warm ?? []) last.warm = [...last.warm.filter((w) => w.store !== run.store), run];
  for (const run of runs.hot ?? []) last.hot = [...last.hot.filter((h) => h.store !== run.store), run];
  if (runs.localDecisionCpu !== undefined) last.localDecisionCpu = runs.localDecisionCpu;
  last[`${part}Date`] = new Date().toISOString();
  last[`${part}Load`] = [runs.loadBefore, loadavg()[0]];
  return last;
}

function write(report) {
  if (quick) return;
  writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(docPath, renderLeasesSection(readFileSync(docPath, "utf8"), report));
}

const loadBefore = loadavg()[0];
if (only === "render" || process.argv.includes("--render")) {
  write(JSON.parse(readFileSync(jsonPath, "utf8")));
  process.exit(0);
}
if (only !== undefined) {
  /** @type {{ warm?: any[], hot?: any[], localDecisionCpu?: any, loadBefore: number }} */
  const runs = { loadBefore };
  if (only === "warm") runs.warm = await onPlanet(() => startPlanet(), warmLeaseRuns);
  else if (only === "hot") runs.hot = await onPlanet(() => startPlanet(), (planet) => hotRuns(planet, false));
  else if (only === "regional-warm") runs.warm = [await onPlanet(regionalPlanet, (planet) => warm(planet, { name: "bench-regional", lease: {}, regional: true }, WARM_TICKS, true))];
  else if (only === "cpu") runs.localDecisionCpu = await measureLocalDecisionCpu();
  else throw new Error(`--only=${only}: one of warm, hot, regional-warm, cpu, render`);
  for (const run of [...(runs.warm ?? []), ...(runs.hot ?? [])]) print(run);
  if (runs.localDecisionCpu !== undefined) console.log("local decision CPU", JSON.stringify(runs.localDecisionCpu));
  write(replaceInLast(only, runs));
  process.exit(0);
}
const report = { date: new Date().toISOString(), loadBefore, quick, regions: REGIONS, warm: [], hot: [] };
report.localDecisionCpu = await measureLocalDecisionCpu();
await onPlanet(
  () => startPlanet(),
  async (planet) => {
    report.warm.push(await warm(planet, { name: "bench-durable", lease: false }, DURABLE_TICKS, false));
    report.warm.push(...(await warmLeaseRuns(planet)));
    report.hot.push(...(await hotRuns(planet, false)));
  },
);
await onPlanet(regionalPlanet, async (regional) => {
  report.warm.push(await warm(regional, { name: "bench-regional", lease: {}, regional: true }, WARM_TICKS, true));
  report.hot.push(...(await hotRuns(regional, true)));
});
report.loadAfter = loadavg()[0];
write(report);
for (const run of [...report.warm, ...report.hot]) print(run);
