// node bench/planet.js: sluice on a planet. Five isolates whose calls to the Durable Object's home take
// 2, 40, 90, 160 and 250 ms (+-20 %), through the geography seam (sluice/testing), run the issue's
// scenarios with each store configuration and print, per region and store: admitted vs limit, the
// share of decisions that waited on a round trip, p50/p99 added latency, and round trips per 1,000
// decisions. Then a 30 s partition of the farthest region, measuring what each fallback over-admits.
// Writes bench/planet.json. The isolates are the planet tests' (test/js/fixtures/planet/).
//
// Latency is the isolate's own clock around limiter.limit() (workerd advances it at I/O): the
// simulated round trips dominate it, so the host's load moves it little; admitted counts do not
// depend on timing at all.
import { writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { REGIONS, startPlanet } from "../test/js/fixtures/planet/harness.js";
import { seededRandom } from "../worker/src/testing/geography.js";
import { loadAverageNow } from "./lib/machine.js";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
// --only=per-user,hot,zipf,partition runs just those scenarios and prints them, leaving bench/planet.json alone.
const onlyArg = process.argv.find((a) => a.startsWith("--only="));
const only = onlyArg === undefined ? null : new Set(onlyArg.slice("--only=".length).split(","));
const wanted = (name) => only === null || only.has(name);
const PARTITION_MS = Number(process.argv.find((a) => a.startsWith("--partition-ms="))?.split("=")[1] ?? 30_000);

const STORES = {
  durable: {},
  "durable + lease": { lease: true },
};

function quantile(sorted, q) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function zipfKeys(count, keys, s, seed) {
  const random = seededRandom(seed);
  const weights = Array.from({ length: keys }, (_, i) => 1 / (i + 1) ** s);
  const total = weights.reduce((a, b) => a + b, 0);
  const cumulative = [];
  let sum = 0;
  for (const w of weights) cumulative.push((sum += w / total));
  return Array.from({ length: count }, () => {
    const u = random();
    let lo = 0;
    let hi = keys - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return `z-${lo}`;
  });
}

// Runs one scenario for one store configuration: `keysOf(region)` are that region's requests (in
// `waves`), all regions at once. Returns per region and in all: admitted vs limit, waits, latency.
async function scenario(planet, { name, limit, store, keysOf, waves }) {
  const limiter = { name: `${name}-${store}`.replaceAll(" ", ""), algorithm: "fixed-window", limit, windowSec: 60, options: STORES[store] };
  const results = await Promise.all(
    planet.regions.map((_, i) => planet.send(i, { op: "requests", limiter, keys: keysOf(i), waves, measure: true })),
  );
  const perKey = {};
  const regions = results.map((r, i) => {
    for (const [key, t] of Object.entries(r.perKey)) perKey[key] = (perKey[key] ?? 0) + t.admitted;
    const sorted = [...r.latencies].sort((a, b) => a - b);
    const decisions = r.latencies.length;
    return {
      region: planet.regions[i].name,
      rttMs: planet.regions[i].rttMs,
      decisions,
      admitted: Object.values(r.perKey).reduce((n, t) => n + t.admitted, 0),
      waitedShare: decisions === 0 ? null : r.waited / decisions,
      p50Ms: quantile(sorted, 0.5),
      p99Ms: quantile(sorted, 0.99),
      roundTripsPer1000: decisions === 0 ? null : (1000 * r.calls) / decisions,
    };
  });
  const over = Object.values(perKey).reduce((n, admitted) => n + Math.max(0, admitted - limit), 0);
  const maxPerKey = Math.max(...Object.values(perKey));
  return { scenario: name, store, limit, keys: Object.keys(perKey).length, maxAdmittedPerKey: maxPerKey, overAdmitted: over, regions };
}

// The farthest region cut off for PARTITION_MS while every region keeps sending: one request per user
// per second from each region, per fallback configuration, all configurations at once.
async function partition(planet) {
  const configs = {
    "default (no fallback, failMode closed)": {},
    'fallback ["memory"]': { fallback: ["memory"] },
    'fallback ["kv"]': { fallback: ["kv"] },
    'failMode "open"': { failMode: "open" },
    "lease: true (keep what was lent)": { lease: true },
  };
  const users = Array.from({ length: 20 }, (_, u) => `p-${u}`);
  const limit = 10;
  const antipode = planet.regions.length - 1;
  const limiters = Object.entries(configs).map(([label, options], c) => ({ label, limiter: { name: `partition-${c}`, algorithm: "fixed-window", limit, windowSec: 60, options } }));
  const admitted = Object.fromEntries(limiters.map(({ label }) => [label, { total: {}, cutRegion: 0, cutDecisions: 0 }]));
  let cut = false;
  let cutRounds = 0;
  const oneSecond = (i) =>
    Promise.all(
      limiters.map(async ({ label, limiter }) => {
        const r = await planet.send(i, { op: "requests", limiter, keys: users });
        for (const [key, t] of Object.entries(r)) {
          admitted[label].total[key] = (admitted[label].total[key] ?? 0) + t.admitted;
          if (i === antipode && cut) {
            admitted[label].cutRegion += t.admitted;
            admitted[label].cutDecisions += t.admitted + t.denied;
          }
        }
      }),
    );
  // Warm: every isolate has measured its round trip and (with leases) may hold one.
  await Promise.all(planet.regions.map((_, i) => oneSecond(i)));
  await planet.send(antipode, { op: "cutOff", ms: PARTITION_MS });
  cut = true;
  const endAt = Date.now() + PARTITION_MS;
  await Promise.all(
    planet.regions.map(async (_, i) => {
      while (Date.now() < endAt) {
        const tick = new Promise((r) => setTimeout(r, 1000));
        await oneSecond(i);
        if (i === antipode) cutRounds++;
        await tick;
      }
    }),
  );
  return limiters.map(({ label }) => {
    const perUser = Object.values(admitted[label].total);
    return {
      fallback: label,
      limit,
      users: users.length,
      overAdmitted: perUser.reduce((n, a) => n + Math.max(0, a - limit), 0),
      maxAdmittedPerUser: Math.max(...perUser),
      admittedInCutRegion: admitted[label].cutRegion,
      decisionsInCutRegion: admitted[label].cutDecisions,
      cutRegionRounds: cutRounds,
    };
  });
}

const startedAt = new Date().toISOString();
const load = loadAverageNow();
const planet = await startPlanet();
await planet.fixObjectClock();
const users = Array.from({ length: 50 }, (_, u) => `user-${u}`);
const figures = [];
try {
  for (const store of Object.keys(STORES)) {
    if (wanted("per-user")) figures.push(await scenario(planet, { name: "per-user", limit: 10, store, keysOf: () => Array(4).fill(users).flat(), waves: 4 }));
    if (wanted("hot")) figures.push(await scenario(planet, { name: "hot key 2,000/min", limit: 2000, store, keysOf: () => Array(640).fill("hot"), waves: 16 }));
    if (wanted("zipf")) figures.push(await scenario(planet, { name: "zipf 1,000 keys", limit: 10, store, keysOf: (i) => zipfKeys(1000, 1000, 1.1, i + 1), waves: 10 }));
  }
  const partitioned = wanted("partition") ? await partition(planet) : [];
  const result = { startedAt, loadAverage: load, regions: REGIONS, jitter: 0.2, partitionMs: PARTITION_MS, figures, partition: partitioned };
  if (only === null) writeFileSync(resolve(root, "bench/planet.json"), `${JSON.stringify(result, null, 2)}\n`);
  for (const f of figures) {
    console.log(`\n${f.scenario}, ${f.store}: at most ${f.maxAdmittedPerKey} admitted per key (limit ${f.limit}), ${f.overAdmitted} over in all`);
    console.log("region    rtt  decisions admitted waited  p50  p99  round trips/1000");
    for (const r of f.regions) {
      const pct = r.waitedShare === null ? "-" : `${(100 * r.waitedShare).toFixed(1)}%`;
      console.log(`${r.region.padEnd(9)} ${String(r.rttMs).padStart(3)} ${String(r.decisions).padStart(10)} ${String(r.admitted).padStart(8)} ${pct.padStart(6)} ${String(r.p50Ms).padStart(4)} ${String(r.p99Ms).padStart(4)} ${r.roundTripsPer1000?.toFixed(0).padStart(8)}`);
    }
  }
  console.log(`\npartition of ${REGIONS.at(-1).name} for ${PARTITION_MS / 1000} s (20 users, limit 10 each):`);
  for (const p of partitioned) {
    console.log(`${p.fallback.padEnd(40)} over-admitted ${String(p.overAdmitted).padStart(4)} (max ${p.maxAdmittedPerUser} per user); cut-off region admitted ${p.admittedInCutRegion} of ${p.decisionsInCutRegion} while cut off (${p.cutRegionRounds} rounds)`);
  }
} finally {
  await planet.dispose();
}
