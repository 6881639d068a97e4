// Configuration errors: every invalid option throws a SluiceConfigError naming it when the middleware
// or limiter is built. Runs under Node, importing the Worker's modules (the .wasm through package.json "imports"),
// since construction needs no request.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";


const { rateLimit, ip, apiKey, user, SluiceConfigError } = await import("../../worker/src/hono.js");
const { createLimiter } = await import("../../worker/src/sluice.js");
// Every remote store's module, loaded: options may then name them by string ("durable", "kv", "redis").
await import("../../worker/src/stores/kinds/durable.js");
await import("../../worker/src/stores/kinds/kv.js");
await import("../../worker/src/stores/kinds/redis.js");
const { isolateTestHooks } = await import("../../worker/src/engine/isolate.js");

// Each test starts from a fresh isolate state: rules declared by one test do not count against the next.
beforeEach(() => isolateTestHooks.reset());

const key = ip();
const valid = { key, limit: 10, windowSec: 60 };

// [what, options, the field the error must name]
const INVALID = [
  ["limit 0", { ...valid, limit: 0 }, "limit"],
  ["negative limit", { ...valid, limit: -3 }, "limit"],
  ["fractional limit", { ...valid, limit: 1.5 }, "limit"],
  ["NaN limit", { ...valid, limit: NaN }, "limit"],
  ["infinite limit", { ...valid, limit: Infinity }, "limit"],
  ["limit as text", { ...valid, limit: "10" }, "limit"],
  ["limit above 2^31", { ...valid, limit: 2 ** 31 + 1 }, "limit"],
  ["missing limit", { key, windowSec: 60 }, "limit"],
  ["zero window", { ...valid, windowSec: 0 }, "windowSec"],
  ["negative window", { ...valid, windowSec: -60 }, "windowSec"],
  ["NaN window", { ...valid, windowSec: NaN }, "windowSec"],
  ["sub-millisecond window", { ...valid, windowSec: 0.0001 }, "windowSec"],
  ["missing window", { key, limit: 10 }, "windowSec"],
  ["windowMs beside windowSec", { ...valid, windowMs: 60_000 }, "windowMs"],
  ["zero windowMs", { key, limit: 10, windowMs: 0 }, "windowMs"],
  ["fractional windowMs", { key, limit: 10, windowMs: 0.5 }, "windowMs"],
  ["windowMs beyond the core's range", { key, limit: 10, windowMs: 2 ** 36 + 1 }, "windowMs"],
  ["rate beside windowMs", { key, algorithm: "gcra", rate: 2, windowMs: 1000 }, "windowMs"],
  ["window beyond the core's range", { ...valid, windowSec: 1e8 }, "windowSec"],
  ["limit x window beyond the core's range", { ...valid, limit: 2 ** 31, windowSec: 2 ** 35 / 1000 }, "windowSec"],
  ["GCRA rate beyond the core's range", { key, algorithm: "gcra", limit: 2 ** 31, windowSec: 0.001 }, "limit"],
  ["unknown algorithm", { ...valid, algorithm: "sliding-window" }, "algorithm"],
  ["missing key", { limit: 10, windowSec: 60 }, "key"],
  ["key of the wrong type", { ...valid, key: 42 }, "key"],
  ["empty key", { ...valid, key: "" }, "key"],
  ["empty key list", { ...valid, key: [] }, "key"],
  ["bad key part", { ...valid, key: [ip(), null] }, "compose(...)[1]"],
  ["burst on a window", { ...valid, burst: 5 }, "burst"],
  ["zero burst", { ...valid, algorithm: "token-bucket", burst: 0 }, "burst"],
  ["NaN burst", { ...valid, algorithm: "token-bucket", burst: NaN }, "burst"],
  ["rate on a window", { key, rate: 2 }, "rate"],
  ["rate beside limit", { key, algorithm: "gcra", rate: 2, limit: 5 }, "limit"],
  ["negative rate", { key, algorithm: "gcra", rate: -1 }, "rate"],
  ["NaN rate", { key, algorithm: "gcra", rate: NaN }, "rate"],
  ["rate finer than 3 decimals", { key, algorithm: "gcra", rate: 0.0001 }, "rate"],
  ["name with the id separator", { ...valid, name: "a|b" }, "name"],
  ["name with a quote", { ...valid, name: 'say "hi"' }, "name"],
  ["empty name", { ...valid, name: "" }, "name"],
  ["overlong name", { ...valid, name: "n".repeat(65) }, "name"],
  ["zero cost", { ...valid, cost: 0 }, "cost"],
  ["fractional cost", { ...valid, cost: 1.5 }, "cost"],
  ["zero key capacity", { ...valid, keyCapacity: 0 }, "keyCapacity"],
  ["key capacity beyond a table's memory", { ...valid, algorithm: "sliding-log", limit: 1000, keyCapacity: 1_000_000 }, "keyCapacity"],
  ["sliding log too large for a default table", { ...valid, algorithm: "sliding-log", limit: 100_000 }, "limit"],
  ["unknown header mode", { ...valid, headers: "all" }, "headers"],
  ["problemJson not boolean", { ...valid, problemJson: "yes" }, "problemJson"],
  ["empty code", { ...valid, code: "" }, "code"],
  ["unknown store", { ...valid, store: "memcached" }, "store"],
  ["store object without decide", { ...valid, store: { name: "mine" } }, "store"],
  ["bindings as text", { ...valid, store: "durable", bindings: "SLUICE_DO" }, "bindings"],
  ["unknown binding", { ...valid, store: "durable", bindings: { redis: "REDIS" } }, "bindings.redis"],
  ["empty Durable Object binding", { ...valid, store: "durable", bindings: { durable: "" } }, "bindings.durable"],
  ["KV binding not text", { ...valid, store: "kv", bindings: { kv: 1 } }, "bindings.kv"],
  ["Durable Object binding for the kv store", { ...valid, store: "kv", bindings: { durable: "SLUICE_DO" } }, "bindings.durable"],
  ["zero shards", { ...valid, store: "durable", shards: 0 }, "shards"],
  ["fractional shards", { ...valid, store: "durable", shards: 1.5 }, "shards"],
  ["too many shards", { ...valid, store: "durable", shards: 4097 }, "shards"],
  ["shards as text", { ...valid, store: "durable", shards: "ip" }, "shards"],
  ["shards for the kv store", { ...valid, store: "kv", shards: 2 }, "shards"],
  ["lease as text", { ...valid, store: "durable", lease: "yes" }, "lease"],
  ["zero leaseMs", { ...valid, store: "durable", lease: { leaseMs: 0 } }, "lease.leaseMs"],
  ["unknown lease option", { ...valid, store: "durable", lease: { units: 5 } }, "lease.units"],
  ["lease for the kv store", { ...valid, store: "kv", lease: true }, "lease"],
  ["lease on the memory store", { ...valid, lease: true }, "lease"],
  ["fallback as text", { ...valid, store: "durable", fallback: "memory" }, "fallback"],
  ["unknown fallback", { ...valid, store: "durable", fallback: ["redis"] }, "fallback[0]"],
  ["kv falling back to kv", { ...valid, store: "kv", fallback: ["kv"] }, "fallback[0]"],
  ["memory before kv", { ...valid, store: "durable", fallback: ["memory", "kv"] }, "fallback"],
  ["a fallback twice", { ...valid, store: "durable", fallback: ["memory", "memory"] }, "fallback"],
  ["unknown failMode", { ...valid, store: "durable", failMode: "sometimes" }, "failMode"],
  ["zero timeout", { ...valid, store: "durable", timeoutMs: 0 }, "timeoutMs"],
  ["NaN timeout", { ...valid, store: "kv", timeoutMs: NaN }, "timeoutMs"],
  ["timeout as text", { ...valid, store: "durable", timeoutMs: "50" }, "timeoutMs"],
  ["preFilter not boolean", { ...valid, store: "durable", preFilter: "yes" }, "preFilter"],
  ["negative log interval", { ...valid, store: "durable", logIntervalMs: -1 }, "logIntervalMs"],
  ["a Durable Object option on the memory store", { ...valid, shards: 4 }, "shards"],
  ["failMode on the memory store", { ...valid, store: "memory", failMode: "closed" }, "failMode"],
  ["timeoutMs beside a store object", { ...valid, store: { decide: () => null }, timeoutMs: 10 }, "timeoutMs"],
  ["bypass as text", { ...valid, bypass: "dev" }, "bypass"],
  ["empty bypass variable", { ...valid, bypass: { variable: "" } }, "bypass.variable"],
  ["bypass value not text", { ...valid, bypass: { value: 1 } }, "bypass.value"],
  ["unknown bypass option", { ...valid, bypass: { header: "x" } }, "bypass.header"],
  ["clock not a function", { ...valid, clock: 5 }, "clock"],
  ["skip not a function", { ...valid, skip: true }, "skip"],
  ["onLimited not a function", { ...valid, onLimited: "429" }, "onLimited"],
  ["unknown option", { ...valid, window: 60 }, "window"],
  ["empty rules", { key, rules: [] }, "rules"],
  ["too many rules", { key, rules: Array.from({ length: 17 }, (_, i) => ({ name: `r${i}`, limit: 1, windowSec: 1 })) }, "rules"],
  ["limit beside rules", { key, limit: 5, rules: [{ limit: 1, windowSec: 1 }] }, "limit"],
  ["rule not an object", { key, rules: [5] }, "rules[0]"],
  ["invalid limit in the second rule", { key, rules: [{ limit: 1, windowSec: 1 }, { limit: 0, windowSec: 1 }] }, "rules[1].limit"],
  ["unknown field in a rule", { key, rules: [{ limit: 1, windowSec: 1, window: 1 }] }, "rules[0].window"],
  ["two rules with one name", { key, rules: [{ name: "x", limit: 1, windowSec: 1 }, { name: "x", limit: 2, windowSec: 1 }] }, "rules[1].name"],
];

for (const [what, options, field] of INVALID) {
  test(`rateLimit refuses ${what}, naming ${field}`, () => {
    assert.throws(
      () => rateLimit(options),
      (error) => {
        assert.ok(error instanceof SluiceConfigError, `${what}: ${error}`);
        assert.equal(error.field, field, `${what}: ${error.message}`);
        assert.ok(error.message.includes(field), error.message);
        return true;
      },
    );
  });
}

test("createLimiter refuses the same mistakes, and onLimited (build the response yourself)", () => {
  for (const [what, options, field] of INVALID) {
    if (field === "onLimited") continue;
    assert.throws(() => createLimiter(options), (error) => error instanceof SluiceConfigError && error.field === field, what);
  }
  assert.throws(() => createLimiter({ ...valid, onLimited: () => undefined }), (error) => error.field === "onLimited");
});

test("key helpers refuse their own bad options when built", () => {
  const cases = [
    [() => ip({ ipv6Prefix: 0 }), "ip({ ipv6Prefix })"],
    [() => ip({ ipv6Prefix: 129 }), "ip({ ipv6Prefix })"],
    [() => ip({ ipv6Prefix: 64.5 }), "ip({ ipv6Prefix })"],
    [() => ip({ trustForwardedFor: "yes" }), "ip({ trustForwardedFor })"],
    [() => apiKey("bad header"), "apiKey(header)"],
    [() => user("alice"), "user(identify)"],
  ];
  for (const [build, field] of cases) {
    assert.throws(build, (error) => error instanceof SluiceConfigError && error.field === field, field);
  }
});

test("store: 'durable' and 'kv' build with their defaults; their options refused elsewhere say where they apply", () => {
  assert.equal(typeof rateLimit({ ...valid, name: "strict", store: "durable" }), "function");
  assert.equal(typeof createLimiter({ ...valid, name: "global", store: "kv", failMode: "closed", fallback: [] }).limit, "function");
  assert.throws(() => rateLimit({ ...valid, timeoutMs: 20 }), /timeoutMs applies to store 'durable', 'kv' and 'redis'; this limiter's store is 'memory'/);
  assert.throws(() => rateLimit({ ...valid, store: "kv", fallback: ["memory", "kv"] }), /fallback\[1\] must be 'memory'/);
});

test("limiters with the same store settings share one chain; its settings and counters are in storeStats()", async () => {
  const { storeStats } = await import("../../worker/src/sluice.js");
  const before = storeStats().length;
  rateLimit({ ...valid, name: "checkout", store: "durable", shards: 3, timeoutMs: 40, failMode: "closed" });
  rateLimit({ ...valid, name: "payment", store: "durable", shards: 3, timeoutMs: 40, failMode: "closed" });
  rateLimit({ ...valid, name: "quota", store: "kv", bindings: { kv: "QUOTA_KV" } });
  const built = storeStats().slice(before);
  assert.deepEqual(
    built.map(({ counters, durable, leases, kv, redis, roundTrip, ...settings }) => settings),
    [
      { store: "durable", bindings: { durable: "SLUICE_DO", kv: "SLUICE_KV" }, shards: 3, fallback: [], failMode: "closed", timeoutMs: 40, breaker: { failures: 5, cooldownMs: 10_000 }, preFilter: true, logIntervalMs: 60_000 },
      { store: "kv", bindings: { kv: "QUOTA_KV" }, shards: undefined, fallback: ["memory"], failMode: "open", timeoutMs: "adaptive", breaker: { failures: 5, cooldownMs: 10_000 }, preFilter: true, logIntervalMs: 60_000 },
    ],
  );
  assert.deepEqual(built[0].counters.decided, { durable: 0, failMode: 0 });
  assert.deepEqual(built[0].durable, { spreadRequests: 0, undone: 0, undoMissed: 0, roundTrips: 0 });
  assert.deepEqual(built[0].roundTrip, { endpoints: 0, samples: 0, srttMs: NaN, rttvarMs: NaN, timeoutMs: 1000, recent: { count: 0, p50Ms: NaN, p99Ms: NaN, maxMs: NaN } });
  assert.deepEqual(built[0].counters.weakened, { failMode: 0 });
  assert.deepEqual(built[1].counters.decided, { kv: 0, memory: 0, failMode: 0 });
  assert.equal(built[1].durable, null);
  assert.deepEqual([built[0].leases, built[1].leases], [null, null]);
  assert.equal(built[1].redis, null);
});

test("store 'durable' with lease puts leases in front of the object; storeStats() reports their counters", async () => {
  const { storeStats } = await import("../../worker/src/sluice.js");
  const before = storeStats().length;
  rateLimit({ ...valid, name: "leased", store: "durable", lease: { leaseMs: 250 } });
  const [built] = storeStats().slice(before);
  assert.deepEqual(built.lease, { leaseMs: 250, maxLeaseUnits: 1000, maxKeys: 10_000, refill: true });
  assert.deepEqual(built.leases, { roundTrips: 0, refills: 0, leasedDecisions: 0, leasesGranted: 0, leasesAhead: 0, bridgedDecisions: 0, unitsLent: 0, leasesExpired: 0, unitsReturned: 0, unitsStranded: 0, unitsPassedOn: 0 });
  assert.deepEqual(built.counters.decided, { durable: 0, failMode: 0 });
});

test("lease.locationHint puts a regional object between the isolate and the home: a hint or a function, named in storeStats()", async () => {
  const { storeStats } = await import("../../worker/src/sluice.js");
  const before = storeStats().length;
  const near = () => "weur";
  rateLimit({ ...valid, name: "regional-a", store: "durable", lease: { locationHint: "oc" } });
  rateLimit({ ...valid, name: "regional-b", store: "durable", lease: { locationHint: near } });
  rateLimit({ ...valid, name: "regional-c", store: "durable", lease: { locationHint: () => "weur" } });
  const built = storeStats().slice(before);
  assert.equal(built.length, 3, "a different function is a different store");
  assert.equal(built[0].lease.locationHint, "oc");
  assert.match(built[1].lease.locationHint, /^function#\d+$/);
  assert.notEqual(built[1].lease.locationHint, built[2].lease.locationHint);
  assert.throws(() => rateLimit({ ...valid, store: "durable", lease: { locationHint: "mars" } }), (error) => error.name === "SluiceConfigError" && /lease\.locationHint/.test(error.message));
});

test("store: 'redis' builds with its defaults: secrets from env, no fallback, failMode closed, one Redis store per settings", async () => {
  const { storeStats } = await import("../../worker/src/stores/registry.js");
  rateLimit({ ...valid, name: "edge-a", store: "redis", timeoutMs: 31 });
  rateLimit({ ...valid, name: "edge-b", store: "redis", timeoutMs: 31 });
  const built = storeStats().filter((chain) => chain.store === "redis" && chain.timeoutMs === 31);
  assert.equal(built.length, 1);
  assert.deepEqual(built[0].bindings, { kv: "SLUICE_KV", redisUrl: "UPSTASH_REDIS_REST_URL", redisToken: "UPSTASH_REDIS_REST_TOKEN" });
  assert.deepEqual([built[0].fallback, built[0].failMode], [[], "closed"]);
  assert.deepEqual(built[0].counters.decided, { redis: 0, failMode: 0 });
  assert.deepEqual(built[0].redis, {
    decisions: 0,
    batches: 0,
    roundTrips: 0,
    conflicts: 0,
    clockRefusals: 0,
    held: 0,
    exhausted: 0,
    givenUp: 0,
    lateAnswered: 0,
    lateApplied: 0,
    undone: 0,
    undoMissed: 0,
    appends: 0,
    overdue: 0,
  });
  assert.equal(built[0].durable, null);
  assert.throws(() => rateLimit({ ...valid, store: "redis", shards: 2 }), /shards applies to store 'durable', not 'redis'/);
  assert.throws(() => rateLimit({ ...valid, store: "redis", bindings: { redisUrl: "" } }), (e) => e.field === "bindings.redisUrl");
});

test("the seeds' usage is accepted unchanged: rateLimit({ key, limit, windowSec, code? })", () => {
  assert.equal(typeof rateLimit({ key: (c) => c.req.header("cf-connecting-ip"), limit: 10, windowSec: 60 }), "function");
  assert.equal(typeof rateLimit({ key: "global", limit: 1000, windowSec: 1, code: "GLOBAL_LIMIT" }), "function");
  assert.equal(typeof rateLimit({ key, rate: 2.5, algorithm: "token-bucket" }), "function");
  assert.equal(typeof rateLimit({ key, limit: 3, windowSec: 0.5, algorithm: "leaky-bucket", burst: 6 }), "function");
});

test("windowMs states the window in milliseconds: the same rule as windowSec", async () => {
  const { normalizeRuleSpec } = await import("../../worker/src/engine/options.js");
  assert.deepEqual(normalizeRuleSpec({ limit: 5, windowMs: 1500 }), normalizeRuleSpec({ limit: 5, windowSec: 1.5 }));
  assert.equal(normalizeRuleSpec({ name: "n", limit: 5, windowMs: 2 ** 36, algorithm: "fixed-window" }).windowMs, 2 ** 36);
});

test("errors name the field under the caller's path and carry the problem apart", async () => {
  const { normalizeRuleSpec } = await import("../../worker/src/engine/options.js");
  assert.throws(
    () => normalizeRuleSpec({ limit: 0, windowSec: 1 }, "routes[2].rules[0]."),
    (error) => error.field === "routes[2].rules[0].limit" && error.problem === "must be a whole number from 1 to 2147483648; got 0",
  );
});

test("rules sharing an id must agree on their table's size", () => {
  rateLimit({ ...valid, name: "same", keyCapacity: 1000 });
  rateLimit({ ...valid, name: "same", keyCapacity: 1000 });
  assert.throws(() => rateLimit({ ...valid, name: "same", keyCapacity: 2000 }), (error) => error.field === "keyCapacity" && /1000/.test(error.message));
});

test("an isolate's rules must fit its instance: at most 64 of them, within the memory budget", () => {
  for (let i = 0; i < 64; i++) rateLimit({ ...valid, name: `small-${i}`, keyCapacity: 10 });
  assert.throws(() => rateLimit({ ...valid, name: "small-64", keyCapacity: 10 }), (error) => error.field === "keyCapacity" && /at most 64/.test(error.message));

  isolateTestHooks.reset();
  rateLimit({ ...valid, name: "big-1", algorithm: "fixed-window", keyCapacity: 1_200_000 });
  assert.throws(
    () => rateLimit({ ...valid, name: "big-2", algorithm: "fixed-window", keyCapacity: 1_200_000 }),
    (error) => error.field === "keyCapacity" && /MiB/.test(error.message),
  );
});

test("the memory budget counts only tables kept in the isolate: a Durable Object's counts take none", () => {
  // About 30.5 MiB of fixed-window table each: two of them do not fit the 56 MiB budget.
  const big = { ...valid, algorithm: "fixed-window", keyCapacity: 1_200_000 };
  for (let i = 0; i < 4; i++) rateLimit({ ...big, name: `exact-${i}`, store: "durable", fallback: [] });
  rateLimit({ ...big, name: "exact-kv-fallback", store: "durable", fallback: ["kv"] });
  assert.throws(
    () => rateLimit({ ...big, name: "exact-memory-fallback", store: "durable", fallback: ["memory"] }),
    (error) => error.field === "keyCapacity" && /to 62 MiB; they must fit in 56 MiB/.test(error.message),
    "the KV view of the first fallback and the memory table of this one",
  );

  isolateTestHooks.reset();
  // The KV store keeps a view table (keyCapacity + 1 keys) and, by default, falls back to memory.
  const half = { ...valid, algorithm: "fixed-window", keyCapacity: 600_000 };
  rateLimit({ ...half, name: "kv-1", store: "kv" });
  assert.throws(() => rateLimit({ ...half, name: "kv-2", store: "kv" }), (error) => error.field === "keyCapacity" && /MiB/.test(error.message));
  rateLimit({ ...half, name: "kv-2", store: "kv", fallback: [] });
});

test("default key capacity keeps a sliding log's table bounded", async () => {
  const { normalizeOptions, DEFAULT_KEY_CAPACITY, DEFAULT_TABLE_BYTES } = await import("../../worker/src/engine/options.js");
  const { tableBytes } = await import("../../worker/src/engine/isolate.js");
  const counter = normalizeOptions({ ...valid, algorithm: "sliding-counter" }, "hono").rules[0];
  assert.equal(counter.keyCapacity, DEFAULT_KEY_CAPACITY);
  const log = normalizeOptions({ ...valid, name: "log", algorithm: "sliding-log", limit: 1000 }, "hono").rules[0];
  assert.ok(log.keyCapacity < DEFAULT_KEY_CAPACITY, `${log.keyCapacity}`);
  assert.ok(tableBytes("sliding-log", 1000, log.keyCapacity) <= DEFAULT_TABLE_BYTES);
  assert.equal(log.id, "log|sliding-log|1000|60000|0");
});

test("an option another rate limiter spells differently is refused with sluice's spelling", () => {
  const valid = { key: ip(), limit: 5, windowSec: 60 };
  for (const [option, instead] of [
    [{ max: 5 }, "did you mean limit?"],
    [{ keyGenerator: () => "k" }, "did you mean key"],
    [{ message: "slow down" }, "did you mean onLimited"],
    [{ statusCode: 503 }, "did you mean onLimited"],
    [{ standardHeaders: "draft-7" }, 'did you mean headers ("draft-6", "draft-7"'],
    [{ windowsec: 60 }, "did you mean windowSec?"],
    [{ timeout: 30 }, "did you mean timeoutMs?"],
  ]) {
    const [field] = Object.keys(option);
    assert.throws(
      () => rateLimit({ ...valid, ...option }),
      (error) => error instanceof SluiceConfigError && error.field === field && error.message.includes(instead),
      field,
    );
  }
  // An option nobody spells so gets no guess.
  assert.throws(() => rateLimit({ ...valid, flux: 1 }), (error) => error.field === "flux" && !error.message.includes("did you mean"));
});
