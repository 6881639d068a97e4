// Round trips per decision of the Redis store when isolates contend for one key, on a loopback Redis
// and on an Upstash in another region (the geography seam's fetch, 150-250 ms +-20 %), and what a
// burst admits against its limit. Counts, not times: round trips are the HTTP requests the Upstash
// REST bridge served (test/js/helpers/redis-bridge.js), the same count the store's own `roundTrips`
// counter keeps.
//
// Each "isolate" is a store of its own (createRedisStore with its defaults: its own cache of states,
// clock offset and learnt timeout), all in this Node process against one real redis-server; they
// interleave on one event loop as isolates interleave on Redis.
//
//   node bench/redis-contention.js            # writes bench/redis-contention.json and docs/redis.md's section
//   node bench/redis-contention.js --quick    # fewer decisions; prints only
// Ports: SLUICE_TEST_PORTS="6431-6439" keeps redis-server and the bridge in a range.
import { writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startBridge } from "../test/js/helpers/redis-bridge.js";
import { startRedis } from "../test/js/helpers/redis-server.js";
import { createRegion } from "../worker/src/testing/geography.js";
import { createRedisStore } from "../worker/src/stores/redis.js";
import { writeDocsSection } from "./lib/docs-section.js";
import { describeMachine } from "./lib/machine.js";
import { median } from "./lib/stats.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const quick = process.argv.includes("--quick");
const TOKEN = "bench-contention-token";
const HOUR = 3_600_000;
const ISOLATES = 4;
const REPS = quick ? 1 : 3;
const FAR_RTTS = [150, 180, 220, 250]; // one region per isolate, +-20 % each call

// One request at a time per isolate, on one key that never runs out: every call races the others.
const SEQUENTIAL = { perIsolate: quick ? 40 : 150, limit: 1_000_000_000 };
// A burst: every request at once, spread over the isolates, more than the limit on each.
const BURST = { requests: 60, limit: 10 };
// Far: one request at a time per isolate, past the limit (admitted must be the limit).
const FAR_SEQUENTIAL = { perIsolate: quick ? 10 : 25, limit: 50 };

let run = 0;
const rule = (limit) => Object.freeze({ id: `contention|fixed-window|${limit}|${HOUR}|0`, name: "contention", algorithm: "fixed-window", limit, windowMs: HOUR, burst: 0, keyCapacity: 1000 });

/**
 * Four stores (isolates) on `url`, each with its own fetch (through its region when far).
 * @param {string} url
 * @param {number[] | null} rtts
 */
function isolates(url, rtts) {
  const prefix = `bench${run++}:`;
  return Array.from({ length: ISOLATES }, (_, i) => {
    const region = rtts === null ? null : createRegion({ name: `far-${i}`, rttMs: rtts[i], jitter: 0.2, seed: i + 1 });
    const fetchFn = region === null ? undefined : region.fetch((input, init) => fetch(input, init));
    return createRedisStore({ url, token: TOKEN, prefix, ...(fetchFn === undefined ? {} : { fetch: fetchFn }) });
  });
}

/** Each isolate sends `perIsolate` decisions one after another; all isolates at once. */
async function sequential(stores, { perIsolate, limit }) {
  const checks = [{ rule: rule(limit), key: "hot", cost: 1 }];
  const lanes = await Promise.all(
    stores.map(async (store) => {
      const outcomes = [];
      for (let i = 0; i < perIsolate; i++) outcomes.push(await store.decide(checks).catch((error) => ({ allowed: false, failed: String(error) })));
      return outcomes;
    }),
  );
  return lanes.flat();
}

/** Every request at once, round-robin over the isolates. */
async function burst(stores, { requests, limit }) {
  const checks = [{ rule: rule(limit), key: "hot", cost: 1 }];
  return Promise.all(Array.from({ length: requests }, (_, i) => stores[i % stores.length].decide(checks).catch((error) => ({ allowed: false, failed: String(error) }))));
}

/**
 * One case: `reps` fresh sets of isolates; per rep the round trips per decision (bridge requests over
 * decisions), admitted, failed (calls given up on or refused: the chain would deny them).
 */
async function measure(bridge, url, name, rtts, drive, params) {
  const reps = [];
  for (let rep = 0; rep < REPS; rep++) {
    const stores = isolates(url, rtts);
    const before = bridge.requests;
    const outcomes = await drive(stores, params);
    const roundTrips = bridge.requests - before;
    const sum = (field) => stores.reduce((total, store) => total + store.counters[field], 0);
    reps.push({
      decisions: outcomes.length,
      admitted: outcomes.filter((o) => o.allowed).length,
      failed: outcomes.filter((o) => o.failed !== undefined).length,
      failedGivenUp: outcomes.filter((o) => o.failed?.startsWith("DeadlineError")).length,
      roundTrips,
      roundTripsPerDecision: roundTrips / outcomes.length,
      conflicts: sum("conflicts"),
      held: sum("held"),
      givenUp: sum("givenUp"),
    });
  }
  const perDecision = reps.map((r) => r.roundTripsPerDecision);
  const row = { name, limit: params.limit, reps, roundTripsPerDecision: { median: median(perDecision), min: Math.min(...perDecision), max: Math.max(...perDecision) } };
  console.log(`${name}: ${row.roundTripsPerDecision.median.toFixed(2)} round trips per decision (${row.roundTripsPerDecision.min.toFixed(2)}-${row.roundTripsPerDecision.max.toFixed(2)}), admitted ${reps.map((r) => r.admitted).join("/")} of limit ${params.limit}, failed ${reps.map((r) => r.failed).join("/")}`);
  return row;
}

function markdown(rows, machine) {
  const fmt = (n) => n.toFixed(2);
  const lines = [
    `Measured by \`node bench/redis-contention.js\` (${machine}; ${REPS} repetitions, each with 4 fresh isolates; round trips are the HTTP requests the REST bridge served; median, range in brackets):`,
    "",
    "| case | round trips per decision | admitted of limit (each repetition) | requests failed |",
    "|---|---|---|---|",
  ];
  for (const row of rows) {
    const { median: m, min, max } = row.roundTripsPerDecision;
    const limitCell = row.limit >= 1_000_000 ? `${row.reps.map((r) => r.admitted).join(", ")} of ${row.reps[0].decisions} (limit not reached)` : `${row.reps.map((r) => r.admitted).join(", ")} of ${row.limit}`;
    lines.push(`| ${row.name} | ${fmt(m)} [${fmt(min)}–${fmt(max)}] | ${limitCell} | ${row.reps.map((r) => r.failed).join(", ")} |`);
  }
  const failed = rows.reduce((sum, row) => sum + row.reps.reduce((n, r) => n + r.failed, 0), 0);
  const givenUp = rows.reduce((sum, row) => sum + row.reps.reduce((n, r) => n + r.failedGivenUp, 0), 0);
  const failures =
    failed === 0
      ? "No request failed. A request fails when its call does not answer within the store's learnt timeout (on this shared machine, when it is loaded)"
      : `${givenUp} of the ${failed} failed requests were given up on: their call did not answer within the store's learnt timeout (on this shared machine, when it is loaded)`;
  lines.push(
    "",
    `${failures}. The fallback chain denies such a request by default (failMode closed). Its call may still land, and a charge in a contended key's log stays: a repetition with failures admits less than the limit, never more.`,
  );
  return lines.join("\n");
}

const redis = await startRedis();
const bridge = await startBridge({ redisPort: redis.port, token: TOKEN });
try {
  const url = bridge.url;
  const far = `Upstash in another region (${FAR_RTTS.join("/")} ms ±20 %)`;
  const rows = [
    await measure(bridge, url, "loopback, one key from 4 isolates, one request at a time each", null, sequential, SEQUENTIAL),
    await measure(bridge, url, `loopback, ${BURST.requests} at once over 4 isolates`, null, burst, BURST),
    await measure(bridge, url, `${far}, one key from 4 isolates, one request at a time each`, FAR_RTTS, sequential, FAR_SEQUENTIAL),
    await measure(bridge, url, `${far}, ${BURST.requests} at once over 4 isolates`, FAR_RTTS, burst, BURST),
  ];
  const overLimit = rows.filter((row) => row.reps.some((r) => r.admitted > row.limit));
  if (overLimit.length > 0) {
    console.error(`admitted beyond the limit: ${overLimit.map((row) => row.name).join("; ")}`);
    process.exitCode = 1;
  }
  const machine = describeMachine();
  if (!quick) {
    writeFileSync(resolve(root, "bench/redis-contention.json"), `${JSON.stringify({ machine, rows }, null, 2)}\n`);
    const where = `${machine.date.slice(0, 16).replace("T", " ")} UTC, ${machine.nproc} cores, load average ${machine.loadAverageAtStart?.join(" ")}, Node ${machine.node}`;
    writeDocsSection(resolve(root, "docs/redis.md"), "redis-contention", markdown(rows, where));
  } else {
    console.log(markdown(rows, "quick run"));
  }
} finally {
  await bridge.stop();
  await redis.stop();
}
