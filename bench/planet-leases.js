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
// Latency is the isolate's clock (1 ms steps) from the request to its decision. Writes
// bench/planet-leases.json (--quick: shorter runs, writes nothing; --only=warm|gcra|regional-warm: that
// warm-keys run again, replacing its namesake in the last full run's JSON).
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, resolve } from "node:path";

import { REGIONS, rule, startPlanet } from "../test/js/fixtures/planet-leases/harness.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const quick = process.argv.includes("--quick");
const WARM_TICKS = quick ? 20 : 75; // 1 s apart: 75 s crosses a minute's boundary
const DURABLE_TICKS = quick ? 5 : 10;
const WARM_KEYS = Array.from({ length: 20 }, (_, i) => `user-${i}`);
const WARM_UP = 2;
const HINTS = { home: "enam", near: "wnam", mid: "weur", far: "apac", antipode: "oc" };
const NEAR_RTT_MS = 10;

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

// One region's figures from its per-key tallies (kinds and latencies in the order requests were sent).
function figures(perKey, leases, warmUp) {
  let decisions = 0;
  let waited = 0;
  let steady = 0;
  let steadyWaited = 0;
  let admitted = 0;
  const latencies = [];
  for (const t of Object.values(perKey)) {
    admitted += t.admitted;
    t.kinds.forEach((kind, i) => {
      decisions++;
      if (kind === "W") waited++;
      if (i < warmUp) return;
      steady++;
      if (kind === "W") steadyWaited++;
      latencies.push(t.latencies[i]);
    });
  }
  latencies.sort((a, b) => a - b);
  const roundTrips = leases === null ? waited : leases.roundTrips;
  return {
    decisions,
    admitted,
    waitedShare: round(waited / decisions),
    waitedShareAfterWarmUp: round(steadyWaited / Math.max(1, steady)),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    roundTripsPer1000: round((1000 * roundTrips) / decisions, 1),
    refills: leases?.refills ?? 0,
  };
}

function round(value, digits = 4) {
  return Math.round(value * 10 ** digits) / 10 ** digits;
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

async function warm(planet, store, ticks, regional, algorithm = "sliding-counter") {
  const r = rule({ name: store.name, algorithm, limit: 100_000, windowMs: 60_000 });
  if (regional) await placeRegionals(planet, store.name);
  const started = Date.now();
  const results = await planet.playEverywhere({ store, rule: r, keys: WARM_KEYS, ticks, gapMs: 1000, latencies: true });
  const perRegion = Object.fromEntries(results.map(({ perKey, leases }, i) => [planet.regions[i].name, figures(perKey, leases, WARM_UP)]));
  return { store: store.name, algorithm, ticks, ms: Date.now() - started, perRegion, ...(regional ? { homeCrossings: await homeCrossings(planet, store.name) } : {}) };
}

async function hot(planet, store, limit, regional) {
  const r = rule({ name: store.name, algorithm: "fixed-window", limit, windowMs: 60_000 });
  await planet.fixObjectClock(store.name);
  if (regional) await placeRegionals(planet, store.name);
  const ticks = Math.ceil((1.6 * limit) / REGIONS.length);
  const results = await planet.playEverywhere({ store, rule: r, keys: ["hot"], ticks, gapMs: 10, latencies: true });
  const perRegion = Object.fromEntries(results.map(({ perKey, leases }, i) => [planet.regions[i].name, figures(perKey, leases, 0)]));
  const admitted = Object.values(perRegion).reduce((n, f) => n + f.admitted, 0);
  return { store: store.name, limit, asked: ticks * REGIONS.length, admitted, overLimit: Math.max(0, admitted - limit), shareOfLimit: round(admitted / limit), perRegion, ...(regional ? { homeCrossings: await homeCrossings(planet, store.name) } : {}) };
}

const only = process.argv.find((arg) => arg.startsWith("--only="))?.slice("--only=".length);
const report = { date: new Date().toISOString(), loadBefore: loadavg()[0], quick, regions: REGIONS, warm: [], hot: [] };
if (only === "regional-warm") {
  // The warm keys through regional objects again; the run replaces its namesake in the last JSON.
  const regional = await regionalPlanet();
  try {
    const run = await warm(regional, { name: "bench-regional", lease: {}, regional: true }, WARM_TICKS, true);
    const path = `${root}/bench/planet-leases.json`;
    const last = JSON.parse(readFileSync(path, "utf8"));
    last.warm = [...last.warm.filter((w) => w.store !== run.store), run];
    last[`${only}Date`] = new Date().toISOString();
    if (!quick) writeFileSync(path, `${JSON.stringify(last, null, 2)}\n`);
    console.log(JSON.stringify(run.homeCrossings));
    for (const [region, f] of Object.entries(run.perRegion)) {
      console.log(`  ${region.padEnd(9)} waited ${(100 * f.waitedShare).toFixed(2)} % (after warm-up ${(100 * f.waitedShareAfterWarmUp).toFixed(2)} %)  p50/p99 ${f.p50Ms}/${f.p99Ms} ms  ${f.roundTripsPer1000} round trips per 1,000`);
    }
  } finally {
    await regional.dispose();
  }
  process.exit(0);
}
if (only === "gcra" || only === "warm") {
  // The warm keys with leases again (--only=warm), or under GCRA, which has no window boundary
  // (--only=gcra); the run replaces its namesake in the last full run's JSON.
  const planet = await startPlanet();
  try {
    const run =
      only === "gcra"
        ? await warm(planet, { name: "bench-lease-gcra", lease: {} }, WARM_TICKS, false, "gcra")
        : await warm(planet, { name: "bench-lease", lease: {} }, WARM_TICKS, false);
    const path = `${root}/bench/planet-leases.json`;
    const last = JSON.parse(readFileSync(path, "utf8"));
    last.warm = [...last.warm.filter((w) => w.store !== run.store), run];
    last[`${only}Date`] = new Date().toISOString();
    if (!quick) writeFileSync(path, `${JSON.stringify(last, null, 2)}\n`);
    for (const [region, f] of Object.entries(run.perRegion)) {
      console.log(`  ${region.padEnd(9)} waited ${(100 * f.waitedShare).toFixed(2)} % (after warm-up ${(100 * f.waitedShareAfterWarmUp).toFixed(2)} %)  p50/p99 ${f.p50Ms}/${f.p99Ms} ms  ${f.roundTripsPer1000} round trips per 1,000`);
    }
  } finally {
    await planet.dispose();
  }
  process.exit(0);
}
const planet = await startPlanet();
try {
  report.warm.push(await warm(planet, { name: "bench-durable", lease: false }, DURABLE_TICKS, false));
  report.warm.push(await warm(planet, { name: "bench-lease", lease: {} }, WARM_TICKS, false));
  report.warm.push(await warm(planet, { name: "bench-lease-gcra", lease: {} }, WARM_TICKS, false, "gcra"));
  for (const limit of [2000, 10_000]) report.hot.push(await hot(planet, { name: `bench-hot-${limit}`, lease: {} }, limit, false));
} finally {
  await planet.dispose();
}
const regional = await regionalPlanet();
try {
  report.warm.push(await warm(regional, { name: "bench-regional", lease: {}, regional: true }, WARM_TICKS, true));
  for (const limit of [2000, 10_000]) report.hot.push(await hot(regional, { name: `bench-regional-hot-${limit}`, lease: {}, regional: true }, limit, true));
} finally {
  await regional.dispose();
}
report.loadAfter = loadavg()[0];
const text = JSON.stringify(report, null, 2);
if (!quick) writeFileSync(`${root}/bench/planet-leases.json`, `${text}\n`);
// A summary per run and region: waited share (after warm-up), p50/p99 ms, round trips per 1,000.
for (const run of [...report.warm, ...report.hot]) {
  const head = run.limit === undefined ? `${run.store} (warm keys)` : `${run.store}: ${run.admitted} of ${run.limit} admitted`;
  console.log(head, run.homeCrossings === undefined ? "" : `home crossings ${JSON.stringify(run.homeCrossings)}`);
  for (const [region, f] of Object.entries(run.perRegion)) {
    console.log(`  ${region.padEnd(9)} waited ${(100 * f.waitedShare).toFixed(2)} % (after warm-up ${(100 * f.waitedShareAfterWarmUp).toFixed(2)} %)  p50/p99 ${f.p50Ms}/${f.p99Ms} ms  ${f.roundTripsPer1000} round trips per 1,000`);
  }
}
