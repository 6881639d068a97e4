// store: 'durable' and 'kv' through the middleware, in workerd (miniflare), through real requests to
// routes of the fixture Worker (test/js/helpers/fixture-worker.js). Three Workers stand for three
// isolates (each its own globalThis) sharing one Durable Object namespace and one KV namespace, so
// accuracy across isolates is measured where it is the point; the test Durable Object and a KV wrapper
// fail on demand for the fallback chain.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { from, startWorkers, storeBindings } from "./helpers/worker.js";

const T0 = Date.UTC(2030, 0, 1);
const ISOLATES = 3;
const LIMIT = 5; // every /stores/* route: 5 per minute per IP
const REQUESTS = 30; // 10 per isolate: more than the limit on each
const OBJECT = "sluice/1/0"; // the one object of shards: 1
const HANG_TIMEOUT_MS = 150; // the routes' timeoutMs where the object is made to hang

const HOME = "fixture";
const names = Array.from({ length: ISOLATES }, (_, i) => (i === 0 ? HOME : `fixture-${i}`));

let mf;
let isolates; // fetchers, one per isolate
let noKv; // an isolate whose Worker binds no KV namespace
const measured = [];

before(async () => {
  mf = await startWorkers([
    ...names.map((name) => ({ name, entry: "fixture", bindings: { ENV: "production" }, ...storeBindings(name, HOME, "TestSluiceDurableObject") })),
    { name: "fixture-nokv", entry: "fixture", bindings: { ENV: "production" }, durableObjects: storeBindings("fixture-nokv", HOME, "TestSluiceDurableObject").durableObjects },
  ]);
  isolates = await Promise.all(names.map((name) => mf.getWorker(name)));
  noKv = await mf.getWorker("fixture-nokv");
  await object("setKnob", "clock", T0);
});

after(async () => {
  await mf.dispose();
  console.log(
    [
      `${REQUESTS} requests through the middleware over ${ISOLATES} isolates, limit ${LIMIT}:`,
      "| store | admitted | bound |",
      "|---|---|---|",
      ...measured.map((row) => `| ${row.store} | ${row.admitted} | ${row.bound} |`),
    ].join("\n"),
  );
});

async function post(worker, path, body) {
  const response = await worker.fetch(`http://fixture${path}`, { method: "POST", body: JSON.stringify(body) });
  assert.equal(response.status, 200, `${path}: ${await response.clone().text()}`);
  return response.json();
}

async function object(method, ...args) {
  return (await post(isolates[0], "/__test/object", { name: OBJECT, method, args })).result;
}

async function kvFault(fault) {
  for (const worker of isolates) await post(worker, "/__test/kv-fault", { fault });
}

/** Runs `body` with the object (and KV, in every isolate) failing as told, then heals them. */
async function failing({ object: objectFault = null, kv = null }, body) {
  await object("setKnob", "fault", objectFault);
  await kvFault(kv);
  try {
    return await body();
  } finally {
    await object("setKnob", "fault", null);
    await kvFault(null);
  }
}

async function get(worker, path, ip) {
  const response = await worker.fetch(`http://fixture${path}`, from(ip));
  const body = await response.json();
  const field = (name) => response.headers.get(name);
  return {
    status: response.status,
    body,
    decision: body.decision ?? null,
    limit: field("x-ratelimit-limit"),
    remaining: field("x-ratelimit-remaining"),
    reset: field("x-ratelimit-reset"),
    policy: field("ratelimit-policy"),
    rateLimit: field("ratelimit"),
    retryAfter: field("retry-after"),
    fallbackHeader: field("x-ratelimit-fallback"),
  };
}

const denied = async (worker, route) => (await worker.fetch(`http://fixture/__test/denied/${route}`)).json();
const storeStats = async (worker = isolates[0]) => (await worker.fetch("http://fixture/__test/store-stats")).json();
// The stats of the chain with these fallbacks and failMode, of the routes with the short timeout.
const statsOf = (all, fallback, failMode = "open") =>
  all.find((s) => s.fallback.join() === fallback && s.failMode === failMode && s.timeoutMs === HANG_TIMEOUT_MS);

// Sends REQUESTS at once from one client, round-robin over the isolates; returns the responses.
function burst(path, ip) {
  return Promise.all(Array.from({ length: REQUESTS }, (_, i) => get(isolates[i % ISOLATES], path, ip)));
}

describe("accuracy across isolates, through the middleware", () => {
  test("durable: a burst spread over the isolates admits exactly the limit", async () => {
    const responses = await burst("/stores/durable", "192.0.2.1");
    const admitted = responses.filter((r) => r.status === 200);
    measured.push({ store: "durable", admitted: admitted.length, bound: `exactly ${LIMIT}` });
    assert.equal(admitted.length, LIMIT);
    assert.deepEqual(admitted.map((r) => r.decision.store), Array(LIMIT).fill("durable"), "the object decided every admission");
    assert.deepEqual(admitted.map((r) => Number(r.remaining)).sort(), [0, 1, 2, 3, 4]);
    for (const refused of responses.filter((r) => r.status === 429)) {
      assert.deepEqual([refused.limit, refused.remaining, refused.body.limit, refused.body.remaining], ["5", "0", 5, 0]);
      // The object's clock stands at T0, a whole minute. The sliding counter (the default) admits again
      // once the full window's weight has fallen by one request: 60 s, plus a fifth of the next window.
      assert.equal(refused.retryAfter, "72");
      assert.equal(refused.rateLimit, '"s-durable";r=0;t=72');
    }
  });

  test("memory: each isolate counts alone, so the client gets isolates x limit", async () => {
    const responses = await burst("/stores/memory", "192.0.2.2");
    const admitted = responses.filter((r) => r.status === 200).length;
    measured.push({ store: "memory", admitted, bound: `up to ${ISOLATES} x ${LIMIT}` });
    // Every isolate saw more than the limit, so each admitted exactly the limit.
    assert.equal(admitted, ISOLATES * LIMIT);
  });

  test("kv: approximate, between the limit and isolates x limit", async () => {
    const responses = await burst("/stores/kv", "192.0.2.3");
    const admitted = responses.filter((r) => r.status === 200);
    measured.push({ store: "kv", admitted: admitted.length, bound: `${LIMIT} to ${ISOLATES} x ${LIMIT}` });
    assert.ok(admitted.length >= LIMIT && admitted.length <= ISOLATES * LIMIT, `admitted ${admitted.length}`);
    assert.ok(admitted.every((r) => r.decision.store === "kv"));
  });
});

describe("the fallback chain, through the middleware", () => {
  test("a throwing Durable Object: KV decides, the decision says so, the headers count KV's", async () => {
    const before = statsOf(await storeStats(), "kv,memory");
    const r = await failing({ object: "throw" }, () => get(isolates[0], "/stores/fallback", "192.0.2.10"));
    assert.equal(r.status, 200);
    assert.equal(r.decision.store, "kv");
    assert.deepEqual(r.decision.fallback, { from: "durable", reason: "durable failed: injected Durable Object failure", weakened: true });
    assert.equal(r.fallbackHeader, "kv");
    assert.deepEqual([r.limit, r.remaining, r.rateLimit], ["5", "4", '"s-fallback";r=4;t=60']);
    const stats = statsOf(await storeStats(), "kv,memory");
    assert.equal(stats.counters.errors.durable - (before?.counters.errors.durable ?? 0), 1);
    assert.equal(stats.counters.decided.kv - (before?.counters.decided.kv ?? 0), 1);
    assert.equal(stats.counters.fallbacks - (before?.counters.fallbacks ?? 0), 1);
  });

  test("a Durable Object hanging past timeoutMs: KV decides once the timeout passes", async () => {
    const r = await failing({ object: "hang" }, () => get(isolates[1], "/stores/fallback", "192.0.2.11"));
    assert.equal(r.status, 200);
    assert.equal(r.decision.store, "kv");
    assert.equal(r.decision.fallback.reason, `durable timed out after ${HANG_TIMEOUT_MS} ms`);
    const stats = statsOf(await storeStats(isolates[1]), "kv,memory");
    assert.equal(stats.counters.timeouts.durable, 1);
  });

  test("Durable Object and KV failing: the isolate's memory decides, and denies past the limit", async () => {
    const ip = "192.0.2.12";
    const responses = await failing({ object: "throw", kv: "throw" }, async () => {
      const seen = [];
      for (let i = 0; i < LIMIT + 1; i++) seen.push(await get(isolates[2], "/stores/fallback", ip));
      return seen;
    });
    assert.deepEqual(responses.map((r) => r.status), [200, 200, 200, 200, 200, 429]);
    const first = responses[0];
    assert.equal(first.decision.store, "memory");
    assert.equal(first.decision.fallback.reason, "durable failed: injected Durable Object failure; kv failed: injected KV read failure");
    const refusal = responses[LIMIT];
    assert.deepEqual([refusal.remaining, refusal.retryAfter, refusal.rateLimit], ["0", "72", '"s-fallback";r=0;t=72']);
    const decision = await denied(isolates[2], "fallback");
    assert.deepEqual([decision.store, decision.fallback.from], ["memory", "durable"]);
  });

  test("no KV bound, but fallback asks for KV before memory: a SluiceConfigError naming bindings.kv, not a quiet per-isolate limit", async () => {
    const response = await noKv.fetch("http://fixture/stores/fallback", from("192.0.2.13"));
    // Hono answers the thrown SluiceConfigError with its plain 500 (planet-defaults.test.js checks the error itself).
    assert.equal(response.status, 500);
    await response.text();
  });

  test("no store can answer, failMode 'open': admitted, with the policy but no counts nobody took", async () => {
    const r = await failing({ object: "throw", kv: "throw" }, () => get(isolates[0], "/stores/strict-open", "192.0.2.14"));
    assert.equal(r.status, 200);
    assert.deepEqual([r.decision.store, r.decision.allowed, r.decision.checks], ["none", true, [null]]);
    assert.equal(r.decision.fallback.reason, "durable failed: injected Durable Object failure; kv failed: injected KV read failure; failing open");
    assert.deepEqual([r.limit, r.remaining, r.reset, r.rateLimit], [null, null, null, null]);
    assert.equal(r.policy, '"s-strict-open";q=5;w=60');
  });

  test("no store can answer, failMode 'closed': a 429 to retry in a second", async () => {
    const r = await failing({ object: "hang", kv: "throw" }, () => get(isolates[1], "/stores/strict-closed", "192.0.2.15"));
    assert.equal(r.status, 429);
    assert.deepEqual([r.retryAfter, r.limit, r.remaining, r.reset, r.rateLimit], ["1", "5", "0", "1", null]);
    assert.deepEqual(r.body, { error: "too many requests", code: "rate_limited", retryAfter: 1, limit: 5, remaining: 0, reset: 1 });
    const decision = await denied(isolates[1], "strict-closed");
    assert.equal(decision.store, "none");
    assert.equal(decision.fallback.reason, `durable timed out after ${HANG_TIMEOUT_MS} ms; kv failed: injected KV read failure; failing closed`);
    const stats = statsOf(await storeStats(isolates[1]), "kv", "closed");
    assert.deepEqual([stats.failMode, stats.counters.decided.failMode, stats.counters.timeouts.durable, stats.counters.errors.kv], ["closed", 1, 1, 1]);
  });

  test("after every failure above, each isolate still serves, on its first instance, decided by the object", async () => {
    for (const worker of [...isolates, noKv]) {
      const r = await get(worker, "/stores/strict-closed", "192.0.2.16");
      assert.equal(r.status, 200);
      assert.equal(r.decision.store, "durable");
      assert.equal(r.decision.fallback, undefined);
      const stats = await (await worker.fetch("http://fixture/__test/stats")).json();
      // At most one instance (none where no memory fallback ever decided), and no failure.
      assert.ok(stats.instancesCreated <= 1);
      assert.equal(stats.instanceFailures, 0);
    }
  });
});

describe("the pre-filter, through the middleware", () => {
  test("a key the object denied is denied from the isolate until its retry time; the headers carry what was decided", async () => {
    const ip = "192.0.2.20";
    const policy = '"pf-short";q=2;w=60, "pf-long";q=10;w=3600';
    const first = await get(isolates[0], "/stores/prefilter", ip);
    const second = await get(isolates[0], "/stores/prefilter", ip);
    assert.deepEqual([first.status, second.status, second.rateLimit], [200, 200, '"pf-short";r=0;t=60, "pf-long";r=8;t=3600']);

    const refused = await get(isolates[0], "/stores/prefilter", ip);
    assert.deepEqual([refused.status, refused.retryAfter, refused.policy], [429, "60", policy]);
    assert.equal(refused.rateLimit, '"pf-short";r=0;t=60, "pf-long";r=8;t=3600', "the object decided both rules");
    const objectDecision = await denied(isolates[0], "prefilter");
    assert.deepEqual([objectDecision.store, objectDecision.preFiltered], ["durable", undefined]);

    const callsBefore = await object("decideCalls");
    const filtered = await get(isolates[0], "/stores/prefilter", ip);
    assert.equal(await object("decideCalls"), callsBefore, "no round trip");
    assert.deepEqual([filtered.status, filtered.retryAfter, filtered.limit, filtered.remaining, filtered.policy], [429, "60", "2", "0", policy]);
    assert.equal(filtered.rateLimit, '"pf-short";r=0;t=60', "pf-long was not consulted: no member for it");
    assert.deepEqual(filtered.body, { error: "too many requests", code: "rate_limited", retryAfter: 60, limit: 2, remaining: 0, reset: 60 });
    const filteredDecision = await denied(isolates[0], "prefilter");
    assert.deepEqual([filteredDecision.store, filteredDecision.preFiltered, filteredDecision.checks[1]], ["durable", true, null]);

    // Another isolate has no memory of the denial: it asks the object, which denies too.
    const elsewhere = await get(isolates[1], "/stores/prefilter", ip);
    assert.equal(elsewhere.status, 429);
    assert.equal(await object("decideCalls"), callsBefore + 1);
  });
});
