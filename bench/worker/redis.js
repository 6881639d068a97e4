// Figure 9: the Redis store (worker/src/stores/redis.js) and its peer, @upstash/ratelimit, against the
// same local redis-server through the Upstash REST bridge (test/js/helpers/redis-bridge.js), both
// reaching it with fetch from workerd isolates as a Worker reaches Upstash.
//
// Locally a round trip is a loopback HTTP request through a Node bridge: these rates say what each
// decision costs in round trips and in the isolate, not what a Redis in another location answers.
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis/cloudflare";
import { createRedisStore } from "../../worker/src/stores/redis.js";
import { createLeasedRedisStore } from "../../worker/src/stores/redis-leases.js";
import { keyOf } from "./workload.js";

const HOUR_MS = 3_600_000;

// sluice's algorithm -> the @upstash/ratelimit limiter of the same rule (limit per hour, capacity = limit).
const PEER_LIMITERS = {
  "fixed-window": (limit) => Ratelimit.fixedWindow(limit, "1 h"),
  "token-bucket": (limit) => Ratelimit.tokenBucket(limit, "1 h", limit),
  "sliding-counter": (limit) => Ratelimit.slidingWindow(limit, "1 h"),
};

const STATE = Symbol.for("sluice.bench.redis");
function state() {
  globalThis[STATE] ??= { sluice: new Map(), peer: new Map() };
  return globalThis[STATE];
}

// One store / Ratelimit per isolate and configuration, built on first use, as a Worker builds them.
function sluiceStore(env) {
  const s = state();
  let store = s.sluice.get("store");
  if (store === undefined) {
    // No timeout, as the peer has none: a timed-out call would be a failure here, not a measurement.
    store = createRedisStore({ prefix: "bench:sluice:", timeoutMs: Infinity });
    s.sluice.set("store", store);
  }
  return store;
}

// The same store with leases in front (store: "redis", lease: true): hot keys decided from lent units.
function leasedStore(env) {
  const s = state();
  let store = s.sluice.get("leased");
  if (store === undefined) {
    store = createLeasedRedisStore({ redis: sluiceStore(env) });
    s.sluice.set("leased", store);
  }
  return store;
}

function peerLimiter(env, algorithm, limit) {
  const s = state();
  const id = `${algorithm}|${limit}`;
  let ratelimit = s.peer.get(id);
  if (ratelimit === undefined) {
    const make = PEER_LIMITERS[algorithm];
    if (make === undefined) throw new Error(`no @upstash/ratelimit limiter for ${algorithm}`);
    const redis = new Redis({
      url: env.UPSTASH_REDIS_REST_URL,
      token: env.UPSTASH_REDIS_REST_TOKEN,
      retry: false,
      enableTelemetry: false,
    });
    // No local cache of blocked keys and no timeout (a timed-out call would count as admitted): every
    // decision is a round trip, as every sluice decision is.
    ratelimit = new Ratelimit({ redis, limiter: make(limit), prefix: `bench:peer:${id}`, ephemeralCache: false, timeout: 0, analytics: false });
    s.peer.set(id, ratelimit);
  }
  return ratelimit;
}

function rule(algorithm, limit) {
  const name = "bench-redis";
  return Object.freeze({ id: `${name}|${algorithm}|${limit}|${HOUR_MS}|0`, name, algorithm, limit, windowMs: HOUR_MS, burst: 0, keyCapacity: 1000 });
}

// A decider: (key) -> Promise<boolean admitted>.
function deciderOf(subject, algorithm, limit, env) {
  if (subject === "sluice" || subject === "sluice-leased") {
    const store = subject === "sluice" ? sluiceStore(env) : leasedStore(env);
    const r = rule(algorithm, limit);
    return async (key) => (await store.decide([{ rule: r, key, cost: 1 }], { nowMs: Date.now(), env })).allowed;
  }
  const ratelimit = peerLimiter(env, algorithm, limit);
  return async (key) => (await ratelimit.limit(key)).success;
}

/**
 * timeRedis runs decisions of `subject` ("sluice" or "upstash") for at least minMs, `inFlight` at a
 * time (each lane one after another, as that many concurrent requests reach an isolate), on keys
 * `${run}:<n>`: "cold" a new key per decision, "warm" 100 keys in turn (the figure first passes over
 * them with countRedis, from the same isolate), "hot" one key (the key other isolates hammer at the
 * same time, for contention).
 * Returns decisions, admitted, ms, and the sluice store's counters (conflicts, clock refusals, calls).
 */
export async function timeRedis({ subject, algorithm, limit, keys, run, minMs, inFlight = 1 }, env) {
  const decide = deciderOf(subject, algorithm, limit, env);
  const keyAt = keys === "cold" ? (i) => `${run}:${keyOf(i)}` : keys === "warm" ? (i) => `${run}:${keyOf(i % 100)}` : () => `${run}:hot`;
  // A leased key lends once its rate here is known (leases.js: two requests): warm it, untimed, as a
  // hot key of a running Worker is.
  if (subject === "sluice-leased") for (let i = 0; i < 4; i++) await decide(keyAt(i));
  const before = subject.startsWith("sluice") ? { ...sluiceStore(env).counters } : null;
  let decisions = 0;
  let admitted = 0;
  const start = performance.now();
  let now = start;
  const lane = async () => {
    while (now - start < minMs) {
      if (await decide(keyAt(decisions++))) admitted++;
      now = performance.now();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const after = before === null ? null : sluiceStore(env).counters;
  return {
    decisions,
    admitted,
    ms: now - start,
    conflicts: after === null ? null : after.conflicts - before.conflicts,
    clockRefusals: after === null ? null : after.clockRefusals - before.clockRefusals,
    calls: after === null ? null : after.batches - before.batches,
  };
}

/**
 * countRedis sends `count` decisions over `keys` keys (`${run}:<n>`), `inFlight` at a time; returns how
 * many were admitted.
 */
export async function countRedis({ subject, algorithm, limit, keys, count, run, inFlight = 1 }, env) {
  const decide = deciderOf(subject, algorithm, limit, env);
  let admitted = 0;
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      if (await decide(`${run}:${keyOf(i % keys)}`)) admitted++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { count, admitted };
}
