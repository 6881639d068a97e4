// Figure 9: the Redis store beside the Durable Object store and beside @upstash/ratelimit, against one
// local redis-server reached through the Upstash REST bridge (test/js/helpers/redis-bridge.js), in the
// same run. Round trips are the HTTP requests the bridge served, counted the same way for both clients.
import { startBridge } from "../../test/js/helpers/redis-bridge.js";
import { startRedis } from "../../test/js/helpers/redis-server.js";
import { median, rotate, summary } from "./stats.js";

/** The isolates figure 9 drives (four, for the contention case). */
export const REDIS_ISOLATES = ["redis-0", "redis-1", "redis-2", "redis-3"];
const TOKEN = "bench-local-token";
const ADMIT_ALL = 1_000_000_000;

/** startRedisForBench starts redis-server and the bridge; returns the isolates' bindings and stop(). */
export async function startRedisForBench() {
  const redis = await startRedis();
  const bridge = await startBridge({ redisPort: redis.port, token: TOKEN });
  const env = { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: TOKEN };
  return {
    bridge,
    bindings: Object.fromEntries(REDIS_ISOLATES.map((name) => [name, env])),
    async stop() {
      await bridge.stop();
      await redis.stop();
    },
  };
}

// subject "sluice" is createRedisStore (store: "redis"), "sluice-leased" the same with leases (store: "redis",
// lease: true); "upstash" is @upstash/ratelimit over @upstash/redis.
const CASES = {
  "sluice, fixed window, cold keys": { subject: "sluice", algorithm: "fixed-window", keys: "cold", isolates: 1 },
  "sluice, fixed window, warm keys": { subject: "sluice", algorithm: "fixed-window", keys: "warm", isolates: 1 },
  "sluice, fixed window, one key from 4 isolates": { subject: "sluice", algorithm: "fixed-window", keys: "hot", isolates: 4 },
  "sluice, fixed window, one key from 4 isolates, 8 in flight each": { subject: "sluice", algorithm: "fixed-window", keys: "hot", isolates: 4, inFlight: 8 },
  "sluice, token bucket, warm keys": { subject: "sluice", algorithm: "token-bucket", keys: "warm", isolates: 1 },
  "sluice with lease, fixed window, one key from 4 isolates": { subject: "sluice-leased", algorithm: "fixed-window", keys: "hot", isolates: 4 },
  "@upstash/ratelimit, fixed window, cold keys": { subject: "upstash", algorithm: "fixed-window", keys: "cold", isolates: 1 },
  "@upstash/ratelimit, fixed window, warm keys": { subject: "upstash", algorithm: "fixed-window", keys: "warm", isolates: 1 },
  "@upstash/ratelimit, fixed window, one key from 4 isolates": { subject: "upstash", algorithm: "fixed-window", keys: "hot", isolates: 4 },
  "@upstash/ratelimit, fixed window, one key from 4 isolates, 8 in flight each": { subject: "upstash", algorithm: "fixed-window", keys: "hot", isolates: 4, inFlight: 8 },
  "@upstash/ratelimit, token bucket, warm keys": { subject: "upstash", algorithm: "token-bucket", keys: "warm", isolates: 1 },
  "durable, 1 check per request": { subject: "durable", isolates: 1 },
};

// The admitted-count comparison: per algorithm, each of 4 isolates sends COUNT decisions over KEYS keys
// at once, IN_FLIGHT at a time (so sluice's isolates batch them), limit LIMIT per key per hour. Fixed
// window and token bucket are exact in both libraries, so both must admit KEYS x LIMIT;
// @upstash/ratelimit's sliding window approximates as sluice's sliding counter does, and is shown beside it.
const AGREEMENT = { limit: 20, keys: 10, count: 200, inFlight: 8, exact: ["fixed-window", "token-bucket"], shown: ["sliding-counter"] };

/**
 * figureRedis measures decisions per second and round trips per decision for each case, interleaved
 * over `plan.reps` repetitions, then the admitted counts. Throws when the exact algorithms disagree.
 */
export async function figureRedis(workerd, bridge, { plan, log, durableIsolate }) {
  log("figure 9: the Redis store and @upstash/ratelimit");
  const names = Object.keys(CASES);
  const samples = Object.fromEntries(names.map((name) => [name, []]));
  for (let rep = 0; rep < plan.reps; rep++) {
    for (const name of rotate(names, rep)) samples[name].push(await measure(workerd, bridge, name, rep, plan.minMs, durableIsolate));
  }
  const rows = {};
  for (const name of names) {
    const runs = samples[name];
    rows[name] = {
      ...CASES[name],
      decisionsPerSecond: summary(runs.map((r) => (r.decisions / r.ms) * 1000)),
      roundTripsPerDecision: median(runs.map((r) => r.roundTrips / r.decisions)),
      conflictsPerDecision: CASES[name].subject.startsWith("sluice") ? median(runs.map((r) => r.conflicts / r.decisions)) : null,
      // How many decisions one applied script call took (sluice batches the requests queued on a key).
      decisionsPerCall: CASES[name].subject.startsWith("sluice") ? median(runs.map((r) => r.decisions / Math.max(1, r.calls))) : null,
    };
  }

  const admitted = {};
  for (const algorithm of [...AGREEMENT.exact, ...AGREEMENT.shown]) {
    admitted[algorithm] = {};
    for (const subject of ["sluice", "upstash"]) {
      const run = `agree-${algorithm}-${subject}`;
      const results = await Promise.all(
        REDIS_ISOLATES.map((isolate) =>
          workerd.call(isolate, "redis", { mode: "count", subject, algorithm, limit: AGREEMENT.limit, keys: AGREEMENT.keys, count: AGREEMENT.count, inFlight: AGREEMENT.inFlight, run }),
        ),
      );
      admitted[algorithm][subject] = results.reduce((sum, r) => sum + r.admitted, 0);
    }
    const exact = AGREEMENT.exact.includes(algorithm);
    admitted[algorithm].exact = exact;
    admitted[algorithm].expected = exact ? AGREEMENT.keys * AGREEMENT.limit : null;
    if (exact && !(admitted[algorithm].sluice === admitted[algorithm].expected && admitted[algorithm].upstash === admitted[algorithm].expected)) {
      throw new Error(`figure 9: ${algorithm} admitted ${JSON.stringify(admitted[algorithm])}; both must admit ${admitted[algorithm].expected}`);
    }
  }
  return {
    measured: true,
    rows,
    admitted,
    agreement: { ...AGREEMENT, isolates: REDIS_ISOLATES.length, requests: REDIS_ISOLATES.length * AGREEMENT.count },
    note:
      "Redis and the REST bridge run on this machine: a round trip is a loopback HTTP request through a Node bridge, " +
      "so the rates compare the clients' work and round trips, not what a Redis in another location answers",
  };
}

async function measure(workerd, bridge, name, rep, minMs, durableIsolate) {
  const c = CASES[name];
  if (c.subject === "durable") {
    const r = await workerd.call(durableIsolate, "durable", { target: "durable", rules: 1, shards: 1, spread: 0, inFlight: 1, minMs });
    return { decisions: r.decisions, ms: r.ms, roundTrips: r.roundTrips };
  }
  const run = `${c.subject}-${c.algorithm}-${c.keys}-${rep}`;
  if (c.keys === "warm") {
    // One pass over the 100 warm keys first, outside the count and the clock.
    await workerd.call(REDIS_ISOLATES[0], "redis", { mode: "count", subject: c.subject, algorithm: c.algorithm, limit: ADMIT_ALL, keys: 100, count: 100, run });
  }
  if (c.subject === "sluice-leased") {
    // Warm the key in every isolate first (timeRedis's untimed warm-up), outside the count.
    await Promise.all(
      REDIS_ISOLATES.slice(0, c.isolates).map((isolate) =>
        workerd.call(isolate, "redis", { subject: c.subject, algorithm: c.algorithm, limit: ADMIT_ALL, keys: c.keys, run, minMs: 0, inFlight: 1 }),
      ),
    );
  }
  const requestsBefore = bridge.requests;
  const results = await Promise.all(
    REDIS_ISOLATES.slice(0, c.isolates).map((isolate) =>
      workerd.call(isolate, "redis", { subject: c.subject, algorithm: c.algorithm, limit: ADMIT_ALL, keys: c.keys, run, minMs, inFlight: c.inFlight ?? 1 }),
    ),
  );
  const decisions = results.reduce((sum, r) => sum + r.decisions, 0);
  return {
    decisions,
    ms: Math.max(...results.map((r) => r.ms)),
    roundTrips: bridge.requests - requestsBefore,
    conflicts: results.reduce((sum, r) => sum + (r.conflicts ?? 0), 0),
    calls: results.reduce((sum, r) => sum + (r.calls ?? 0), 0),
  };
}
