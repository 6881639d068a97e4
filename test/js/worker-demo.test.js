// The demo in workerd (miniflare), through real requests. Two Workers serve it:
//  - the Hono demo app (worker/demo/demo.js, the middleware's example) in the test fixture, on a clock
//    the tests set: the seed scenario, the tiers, keys a client cannot split or reset, IPv6 grouping;
//  - the shipped Worker (worker/index.js): the gateway, configured by gateway.config.json with the
//    same tiers, in front of the demo upstream (its own DemoUpstream entrypoint, through the service
//    binding DEMO_UPSTREAM, as wrangler.toml binds it), on the wall clock: its runs assert relative to
//    the current window, and are repeated when they straddle a minute boundary.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ADMIN_TOKEN, UPSTREAM_TOKEN } from "./fixtures/gateway/harness.js";
import { parseExposition, sample } from "./helpers/prometheus.js";
import { bundle, from, startWorkers, storeBindings } from "./helpers/worker.js";

const T0 = Date.UTC(2030, 0, 1); // a whole minute: fixed windows of 60 s start here
// A successful login of the demo (its one password); the routes other than /auth/login ignore it.
const LOGIN = JSON.stringify({ username: "demo-user", password: "correct horse battery staple" });
const SECOND = 1000;
const MINUTE = 60 * SECOND;

let mf;
let demo; // the shipped Worker, worker/index.js, ENV=production
let demoDev; // the same, ENV=dev
let degraded; // the same with a Durable Object that always fails (bound, but down): the durable store always falls back

// The shipped Worker as wrangler.toml binds it: its secrets, its own upstream entrypoint and (unless
// `stores` says otherwise) SLUICE_DO and SLUICE_KV.
function shipped(name, env, stores = storeBindings(name, "demo", "SluiceDurableObject")) {
  return {
    name,
    entry: "demo",
    bindings: { ENV: env, UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN },
    serviceBindings: { DEMO_UPSTREAM: { name, entrypoint: "DemoUpstream" } },
    ...stores,
  };
}

before(async () => {
  mf = await startWorkers([
    { name: "fixture", entry: "fixture", bindings: { ENV: "production" }, ...storeBindings("fixture", "fixture", "TestSluiceDurableObject") },
    shipped("demo", "production"),
    shipped("demo-dev", "dev"),
    shipped("demo-degraded", "production", {
      durableObjects: { SLUICE_DO: { className: "FailingDurableObject", scriptName: "fixture", useSQLite: true } },
      kvNamespaces: { SLUICE_KV: "sluice-kv-degraded" },
    }),
  ]);
  demo = await mf.getWorker("demo");
  demoDev = await mf.getWorker("demo-dev");
  degraded = await mf.getWorker("demo-degraded");
});
after(() => mf.dispose());

/**
 * inOneMinute runs `scenario(attempt)` on the wall clock and returns { result, started, finished };
 * a run that straddled a minute boundary (where windows turn) is repeated once, with the attempt
 * number to pick fresh keys (a run cannot straddle twice).
 */
async function inOneMinute(scenario) {
  for (let attempt = 0; attempt < 2; attempt++) {
    const started = Date.now();
    const result = await scenario(attempt);
    const finished = Date.now();
    if (Math.floor(started / MINUTE) === Math.floor(finished / MINUTE)) return { result, started, finished };
  }
  assert.fail("two runs straddled a minute boundary");
}

/** The shipped Worker's metrics, parsed, scraped with the admin token. */
async function metricsOf(worker) {
  const response = await worker.fetch("http://demo/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(response.status, 200);
  return parseExposition(await response.text());
}

async function at(now) {
  const response = await mf.dispatchFetch("http://fixture/__test/clock", { method: "POST", body: JSON.stringify({ now }) });
  assert.equal(response.status, 200);
}

function limits(response) {
  return {
    status: response.status,
    limit: response.headers.get("x-ratelimit-limit"),
    remaining: response.headers.get("x-ratelimit-remaining"),
    reset: response.headers.get("x-ratelimit-reset"),
    retryAfter: response.headers.get("retry-after"),
    rateLimit: response.headers.get("ratelimit"),
    policy: response.headers.get("ratelimit-policy"),
  };
}

async function get(path, init) {
  const response = await mf.dispatchFetch(`http://fixture/demo${path}`, init);
  const result = { ...limits(response), body: await response.json() };
  return result;
}

test("seed scenario: 7 requests to /data from one IP; 1-5 pass with 4..0 left, 6-7 get 429 counting down to the window's end", async () => {
  const ip = "192.0.2.10";
  // [step, instant, status, remaining, Retry-After]
  const steps = [
    [1, T0 + 10 * SECOND, 200, "4", null],
    [2, T0 + 11 * SECOND, 200, "3", null],
    [3, T0 + 12 * SECOND, 200, "2", null],
    [4, T0 + 13 * SECOND, 200, "1", null],
    [5, T0 + 14 * SECOND, 200, "0", null],
    [6, T0 + 20 * SECOND, 429, "0", "40"],
    [7, T0 + 59 * SECOND + 500, 429, "0", "1"],
  ];
  for (const [step, now, status, remaining, retryAfter] of steps) {
    await at(now);
    const r = await get("/data", from(ip));
    assert.equal(r.status, status, `step ${step}`);
    assert.equal(r.limit, "5", `step ${step}`);
    assert.equal(r.remaining, remaining, `step ${step}`);
    assert.equal(r.retryAfter, retryAfter, `step ${step}`);
    const untilWindowEnd = String(Math.ceil((T0 + 60 * SECOND - now) / SECOND));
    assert.equal(r.reset, untilWindowEnd, `step ${step}: X-RateLimit-Reset is seconds until the window turns`);
    assert.equal(r.policy, '"data";q=5;w=60', `step ${step}`);
    assert.equal(r.rateLimit, `"data";r=${remaining};t=${untilWindowEnd}`, `step ${step}`);
    if (status === 429) {
      assert.deepEqual(r.body, {
        error: "too many requests",
        code: "rate_limited",
        retryAfter: Number(retryAfter),
        limit: 5,
        remaining: 0,
        reset: Number(untilWindowEnd),
      });
    }
  }
  await at(T0 + 60 * SECOND);
  const next = await get("/data", from(ip));
  assert.equal(next.status, 200, "the next window admits again");
  assert.equal(next.remaining, "4");
});

test("seed scenario on the shipped Worker, on the wall clock: Retry-After is the time left in the epoch-aligned minute", async () => {
  const { result: results, started, finished } = await inOneMinute(async (attempt) => {
    const collected = [];
    for (let i = 0; i < 7; i++) {
      const response = await demo.fetch("http://demo/data", from(`198.51.100.${20 + attempt}`));
      collected.push({ ...limits(response), body: await response.json() });
    }
    return collected;
  });
  const windowEnd = (Math.floor(started / MINUTE) + 1) * MINUTE;
  assert.deepEqual(results.map((r) => r.status), [200, 200, 200, 200, 200, 429, 429]);
  assert.deepEqual(results.map((r) => r.remaining), ["4", "3", "2", "1", "0", "0", "0"]);
  assert.deepEqual(results[0].body, { data: "ok" }, "the upstream's own answer");
  for (const r of results) assert.equal(r.policy, '"data";q=5;w=60');
  for (const r of results.slice(5)) {
    const retryAfter = Number(r.retryAfter);
    assert.ok(retryAfter >= Math.ceil((windowEnd - finished) / 1000) && retryAfter <= Math.ceil((windowEnd - started) / 1000), `${retryAfter}`);
    assert.equal(r.reset, r.retryAfter, "a fixed window resets when it admits again");
    assert.deepEqual(r.body, { error: "too many requests", code: "sluice_rate_limited", retryAfter, limit: 5, remaining: 0, reset: retryAfter });
  }
  assert.ok(Number(results[6].retryAfter) <= Number(results[5].retryAfter), "counting down");
});

test("POST /auth/login admits 10 per minute per IP, POST /auth/refresh 30", async () => {
  await at(T0 + 120 * SECOND);
  const post = (path, ip) => mf.dispatchFetch(`http://fixture/demo${path}`, from(ip, {}, { method: "POST", body: LOGIN }));
  for (let i = 1; i <= 10; i++) assert.equal((await post("/auth/login", "192.0.2.30")).status, 200, `login ${i}`);
  const denied = await post("/auth/login", "192.0.2.30");
  assert.equal(denied.status, 429);
  assert.match(denied.headers.get("ratelimit-policy"), /^"login";q=10;w=60$/);
  assert.equal(denied.headers.get("retry-after"), "300", "exceeding the login limit blocks the IP for 5 minutes");
  assert.equal((await post("/auth/login", "192.0.2.31")).status, 200, "another IP has its own limit");
  assert.equal((await post("/auth/refresh", "192.0.2.30")).status, 200, "refresh is limited apart from login");

  for (let i = 2; i <= 30; i++) assert.equal((await post("/auth/refresh", "192.0.2.30")).status, 200, `refresh ${i}`);
  assert.equal((await post("/auth/refresh", "192.0.2.30")).status, 429);
});

test("POST /auth/refresh blocks an IP refused 30 times within 10 minutes for an hour, past the window", async () => {
  await at(T0 + 150 * SECOND);
  const post = (ip) => mf.dispatchFetch("http://fixture/demo/auth/refresh", from(ip, {}, { method: "POST", body: LOGIN }));
  const statuses = [];
  for (let i = 0; i < 60; i++) statuses.push((await post("192.0.2.40")).status);
  assert.deepEqual(statuses, [...Array(30).fill(200), ...Array(30).fill(429)]);
  const blocked = await post("192.0.2.40");
  assert.deepEqual([blocked.status, blocked.headers.get("retry-after")], [429, "3600"]);
  // Two minutes later the rule alone would admit 30 again: the IP stays refused, to the block's end.
  await at(T0 + 270 * SECOND);
  const later = await post("192.0.2.40");
  assert.deepEqual([later.status, later.headers.get("retry-after")], [429, "3480"]);
  assert.equal((await post("192.0.2.41")).status, 200, "another IP is not affected");
});

test("/api/* admits 120 per minute per user (the bearer token); without a token, per IP", async () => {
  await at(T0 + 180 * SECOND);
  const call = (ip, token) => get("/api/whoami", from(ip, token === undefined ? {} : { authorization: `Bearer ${token}` }));
  // One user from many addresses; all in flight at once (the isolate decides them one by one).
  const first119 = await Promise.all(Array.from({ length: 119 }, (_, i) => call(`203.0.113.${i}`, "alice")));
  assert.deepEqual(new Set(first119.map((r) => r.status)), new Set([200]));
  assert.deepEqual(first119.map((r) => Number(r.remaining)).sort((a, b) => b - a), Array.from({ length: 119 }, (_, i) => 119 - i));
  const last = await call("203.0.113.249", "alice");
  assert.deepEqual(last.body, { limitedAs: "user", remaining: 0 });
  assert.equal((await call("203.0.113.250", "alice")).status, 429, "a new address does not help the same user");
  const bob = await call("203.0.113.1", "bob");
  assert.equal(bob.status, 200, "another user has his own limit");
  assert.deepEqual(bob.body, { limitedAs: "user", remaining: 119 });
  const anonymous = await call("203.0.113.1");
  assert.deepEqual(anonymous.body, { limitedAs: "ip", remaining: 119 });
});

test("POST /api/checkout admits 5 per minute per user, counted by the Durable Object, on top of /api/*", async () => {
  await at(T0 + 200 * SECOND);
  // The Durable Object keeps its own clock: stand it at the same instant.
  const knob = await mf.dispatchFetch("http://fixture/__test/object", {
    method: "POST",
    body: JSON.stringify({ name: "sluice/1/0", method: "setKnob", args: ["clock", T0 + 200 * SECOND] }),
  });
  assert.equal(knob.status, 200);
  const checkout = (token) => mf.dispatchFetch("http://fixture/demo/api/checkout", from("203.0.113.70", { authorization: `Bearer ${token}` }, { method: "POST" }));

  const seen = [];
  for (let i = 0; i < 6; i++) {
    const response = await checkout("dave");
    seen.push({ ...limits(response), body: await response.json() });
  }
  assert.deepEqual(seen.map((r) => r.status), [200, 200, 200, 200, 200, 429]);
  assert.deepEqual(seen.slice(0, 5).map((r) => [r.body.decidedBy, r.body.remaining]), [["durable", 4], ["durable", 3], ["durable", 2], ["durable", 1], ["durable", 0]]);
  // Both limits are on the response; X-RateLimit-* names the one with less left: checkout's.
  assert.equal(seen[0].policy, '"checkout";q=5;w=60, "api";q=120;w=60');
  // 20 s into a sliding-counter window: back to full quota when this window and the next have passed.
  assert.equal(seen[0].rateLimit, '"checkout";r=4;t=100, "api";r=119;t=100');
  assert.deepEqual([seen[0].limit, seen[0].remaining], ["5", "4"]);
  const refused = seen[5];
  // The five leave the count once a fifth of the next window has passed: at 252 s, 52 s from now.
  assert.deepEqual([refused.limit, refused.remaining, refused.retryAfter], ["5", "0", "52"]);
  assert.deepEqual([refused.body.code, refused.body.limit], ["rate_limited", 5]);

  // /api/* counted all six (the checkout limit denied the sixth after /api/* had admitted it).
  const whoami = await get("/api/whoami", from("203.0.113.71", { authorization: "Bearer dave" }));
  assert.deepEqual(whoami.body, { limitedAs: "user", remaining: 113 });
  const other = await checkout("erin");
  assert.equal(other.status, 200, "another user has their own checkout limit");
});

test("a client-set x-forwarded-for can neither split nor reset a limit", async () => {
  await at(T0 + 240 * SECOND);
  const ip = "192.0.2.40";
  for (let i = 0; i < 5; i++) {
    const r = await get("/data", from(ip, { "x-forwarded-for": `10.0.0.${i}` }));
    assert.equal(r.status, 200);
    assert.equal(r.remaining, String(4 - i), "each spoofed address still counts against the real one");
  }
  for (const spoof of ["10.9.9.9", "192.0.2.41", "unknown", "", "::1", "192.0.2.40, 10.0.0.1"]) {
    const r = await get("/data", from(ip, { "x-forwarded-for": spoof, "x-real-ip": "10.1.1.1", forwarded: "for=10.2.2.2" }));
    assert.equal(r.status, 429, `x-forwarded-for: ${JSON.stringify(spoof)}`);
  }
});

test("IPv6 clients are grouped by /64; spellings and IPv4-mapped forms cannot split a limit", async () => {
  await at(T0 + 300 * SECOND);
  const sameSlash64 = ["2001:db8:5:6::1", "2001:db8:5:6:ffff::2", "2001:0DB8:0005:0006:0:0:0:3", "2001:db8:5:6:1:2:3:4", "[2001:db8:5:6::9]"];
  for (const [i, address] of sameSlash64.entries()) {
    const r = await get("/data", from(address));
    assert.equal(r.status, 200, address);
    assert.equal(r.remaining, String(4 - i), `${address} counts in the /64`);
  }
  assert.equal((await get("/data", from("2001:db8:5:6:dead:beef::1"))).status, 429);
  assert.equal((await get("/data", from("2001:db8:5:7::1"))).remaining, "4", "the next /64 is another client");

  await get("/data", from("192.0.2.50"));
  const mapped = await get("/data", from("::ffff:192.0.2.50"));
  assert.equal(mapped.remaining, "3", "::ffff:192.0.2.50 is 192.0.2.50");
});

test("requests without a usable client address share one 'unknown' limit: never a bypass", async () => {
  // (miniflare fills in cf-connecting-ip when a request has none, so unusable values stand in for it;
  // worker-keys.test.js covers the absent header.)
  await at(T0 + 360 * SECOND);
  const statuses = [];
  for (const address of ["not-an-ip", "999.1.1.1", "1.2.3", "fe80::1%eth0", "::1::2", "x".repeat(200)]) {
    statuses.push((await get("/data", from(address))).status);
  }
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
});

test("ENV=dev bypasses every limit of a request to a loopback host, and says so without naming the variable", async () => {
  for (let i = 0; i < 12; i++) {
    const response = await demoDev.fetch("http://localhost:8787/auth/login", from("192.0.2.60", {}, { method: "POST", body: LOGIN }));
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-ratelimit-bypassed"), "true");
    assert.equal(response.headers.get("x-ratelimit-remaining"), null);
    assert.equal(response.headers.get("ratelimit"), null);
  }
});

test("ENV=dev left on a deployed Worker (a request to its zone's host) limits as usual", async () => {
  const statuses = [];
  for (let i = 0; i < 6; i++) {
    const response = await demoDev.fetch("http://api.example.com/data", from("192.0.2.62"));
    assert.equal(response.headers.get("x-ratelimit-bypassed"), null);
    statuses.push(response.status);
  }
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
});

test("nothing a client sends turns the bypass on", async () => {
  const hostile = {
    env: "dev",
    "x-env": "dev",
    "x-ratelimit-bypassed": "ENV=dev",
    cookie: "ENV=dev",
    "cf-worker": "dev",
  };
  const statuses = [];
  for (let i = 0; i < 6; i++) {
    const response = await demo.fetch("http://demo/data?ENV=dev&env=dev", from("192.0.2.61", hostile));
    assert.equal(response.headers.get("x-ratelimit-bypassed"), null);
    statuses.push(response.status);
  }
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
});

test("the shipped Worker carries no test hooks: none is bundled, none is routed", async () => {
  const shipped = await bundle("demo");
  assert.doesNotMatch(shipped, /trapOnNextCheck|exhaustMemory/);
  for (const path of ["/__test/trap", "/__test/exhaust", "/__test/clock"]) {
    assert.equal((await demo.fetch(`http://demo${path}`, { method: "POST" })).status, 404, path);
  }
});

describe("the shipped Worker: the gateway in front of the demo upstream", () => {
  const post = (worker, path, ip, headers = {}) => worker.fetch(`http://demo${path}`, from(ip, { "content-type": "application/json", ...headers }, { method: "POST", body: LOGIN }));

  test("POST /auth/login admits 10 per minute per IP, POST /auth/refresh 30, each apart", async () => {
    const { result } = await inOneMinute(async (attempt) => {
      const ip = `198.51.100.${40 + attempt}`;
      const login = [];
      for (let i = 0; i < 11; i++) login.push(await post(demo, "/auth/login", ip));
      const refresh = [];
      for (let i = 0; i < 31; i++) refresh.push(await post(demo, "/auth/refresh", ip));
      return { login, refresh, other: await post(demo, "/auth/login", `198.51.100.${50 + attempt}`) };
    });
    assert.deepEqual(result.login.map((r) => r.status), [...Array(10).fill(200), 429]);
    assert.deepEqual(await result.login[0].json(), { ok: true, action: "login" });
    assert.equal(result.login[10].headers.get("ratelimit-policy"), '"login";q=10;w=60');
    assert.equal(result.login[10].headers.get("retry-after"), "300", "the gateway's login rule blocks for blockSec: 300");
    assert.deepEqual(result.refresh.map((r) => r.status), [...Array(30).fill(200), 429], "refresh is limited apart from login");
    assert.equal(result.other.status, 200, "another IP has its own limit");
  });

  test("/api admits 120 per minute per user (the bearer token, forwarded to the API); without a token, per IP", async () => {
    const { result } = await inOneMinute(async (attempt) => {
      const alice = `alice-${attempt}`;
      const call = (ip, token) => demo.fetch("http://demo/api/whoami", from(ip, token === undefined ? {} : { authorization: `Bearer ${token}` }));
      const first = await Promise.all(Array.from({ length: 120 }, (_, i) => call(`203.0.113.${i}`, alice)));
      return {
        first: await Promise.all(first.map(async (r) => ({ ...limits(r), body: await r.json() }))),
        denied: await call("203.0.113.250", alice),
        bob: await call("203.0.113.1", `bob-${attempt}`),
        anonymous: [await call(`192.0.2.${70 + attempt}`), await call(`192.0.2.${70 + attempt}`)],
      };
    });
    assert.deepEqual(new Set(result.first.map((r) => r.status)), new Set([200]));
    assert.deepEqual(result.first.map((r) => Number(r.remaining)).sort((a, b) => b - a), Array.from({ length: 120 }, (_, i) => 119 - i));
    assert.match(result.first[0].body.user, /^alice-\d$/, "the API sees the user's token; the gateway keyed by it");
    assert.equal(result.denied.status, 429, "a new address does not help the same user");
    assert.equal(result.bob.status, 200, "another user has his own limit");
    assert.equal(result.bob.headers.get("x-ratelimit-remaining"), "119");
    assert.deepEqual(await result.anonymous[0].json(), { user: null });
    assert.deepEqual(result.anonymous.map((r) => r.headers.get("x-ratelimit-remaining")), ["119", "118"], "without a token: per IP");
  });

  test("POST /api/checkout: 5 per minute per user in the Durable Object, on top of /api", async () => {
    await post(demo, "/api/checkout", "198.51.100.30", { authorization: "Bearer warm-up" }); // starts the object, which 50 ms is not meant for
    const fallbacks = async () => sample(await metricsOf(demo), "sluice_rule_fallbacks_total", { route: "/api/checkout", rule: "checkout" });
    // On a loaded machine a call may still outlast the shipped 50 ms and fall back (to KV, which has
    // counted nothing for this user): the metrics show it, and such a run is repeated with a fresh user.
    for (let attempt = 0; attempt < 3; attempt++) {
      const before = await fallbacks();
      const seen = [];
      for (let i = 0; i < 6; i++) {
        const response = await post(demo, "/api/checkout", "198.51.100.30", { authorization: `Bearer frank-${attempt}` });
        seen.push({ ...limits(response), body: await response.json() });
      }
      if ((await fallbacks()) > before) continue;
      assert.deepEqual(seen.map((r) => r.status), [200, 200, 200, 200, 200, 429]);
      assert.deepEqual(seen[0].body, { ok: true, action: "checkout" });
      assert.deepEqual(seen.map((r) => r.remaining), ["4", "3", "2", "1", "0", "0"], "X-RateLimit-* names the limit with less left: checkout's");
      assert.equal(seen[0].policy, '"checkout";q=5;w=60, "api";q=120;w=60');
      assert.match(seen[0].rateLimit, /^"checkout";r=4;t=\d+, "api";r=\d+;t=\d+$/);
      assert.deepEqual([seen[5].body.code, seen[5].body.limit], ["sluice_rate_limited", 5]);
      // /api counted all six: the memory store is asked first, and the Durable Object denied the sixth.
      const whoami = await demo.fetch("http://demo/api/whoami", from("198.51.100.31", { authorization: `Bearer frank-${attempt}` }));
      assert.equal(whoami.headers.get("x-ratelimit-remaining"), "113");
      assert.equal((await post(demo, "/api/checkout", "198.51.100.30", { authorization: `Bearer erin-${attempt}` })).status, 200);
      return;
    }
    assert.fail("three runs fell back from the Durable Object");
  });

  test("metrics at the admin path: admitted, denied, near-limit per rule, only with the bearer token", async () => {
    for (const authorization of [undefined, "Bearer wrong-token-wrong-token-wrong-token", `Basic ${ADMIN_TOKEN}`]) {
      const response = await demo.fetch("http://demo/_sluice/metrics", { headers: authorization === undefined ? {} : { authorization } });
      assert.equal(response.status, 401);
      assert.ok(!(await response.text()).includes("sluice_rule"));
    }
    const data = { route: "/data", rule: "data", mode: "enforce" };
    const counts = (families) => ["admitted", "denied", "near_limit", "fallbacks"].map((event) => sample(families, `sluice_rule_${event}_total`, data));
    const { result: added } = await inOneMinute(async (attempt) => {
      const before = counts(await metricsOf(demo));
      for (let i = 0; i < 7; i++) await demo.fetch("http://demo/data", from(`198.51.100.${60 + attempt}`));
      return counts(await metricsOf(demo)).map((n, i) => n - before[i]);
    });
    // Admitted 5 (the 4th and 5th left 1 and 0 of 5: near the limit), denied 2, no fallback.
    assert.deepEqual(added, [5, 2, 2, 0]);
  });

  test("a store that fails is counted: while its Durable Object fails, checkout is decided by KV, as a fallback", async () => {
    const checkout = { route: "/api/checkout", rule: "checkout", mode: "enforce" };
    const before = sample(await metricsOf(degraded), "sluice_rule_fallbacks_total", checkout);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post(degraded, "/api/checkout", "198.51.100.80", { authorization: "Bearer grace" })).status);
    assert.deepEqual(statuses, [200, 200, 200]);
    const families = await metricsOf(degraded);
    assert.equal(sample(families, "sluice_rule_fallbacks_total", checkout) - before, 3);
    assert.equal(sample(families, "sluice_rule_fallbacks_total", { route: "/api/checkout", rule: "api" }), 0, "the memory store did not fail");
  });

  test("only the demo's routes and methods are forwarded, paths cannot climb out, the client cannot supply the credential", async () => {
    const root = await demo.fetch("http://demo/", from("198.51.100.90"));
    assert.equal(root.status, 404);
    assert.equal((await root.json()).code, "sluice_no_route");
    const wrongMethod = await demo.fetch("http://demo/auth/login", from("198.51.100.90"));
    assert.deepEqual([wrongMethod.status, wrongMethod.headers.get("allow")], [405, "POST"]);
    const climbing = await demo.fetch("http://demo/data/..%2f..%2fauth%2flogin", from("198.51.100.90"));
    assert.equal(climbing.status, 400);
    assert.equal((await climbing.json()).code, "sluice_bad_path");
    // The upstream answers only the gateway's credential; a client's own is dropped and replaced.
    const forged = await post(demo, "/auth/refresh", "198.51.100.91", { "x-upstream-token": "guessed" });
    assert.equal(forged.status, 200);
    assert.ok(!JSON.stringify([...forged.headers]).includes(UPSTREAM_TOKEN));
  });
});
