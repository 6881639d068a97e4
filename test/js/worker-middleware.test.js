// The middleware and createLimiter in workerd (miniflare), through real requests to the fixture Worker
// (test/js/helpers/fixture-worker.js), on its injected clock.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { from, startWorkers } from "./helpers/worker.js";

const T0 = Date.UTC(2030, 0, 1);
const SECOND = 1000;

let mf;
let local; // the fixture with STAGE=local (its /bypass route's variable)
let dev; // the fixture with ENV=dev

before(async () => {
  mf = await startWorkers([
    { name: "fixture", entry: "fixture", bindings: { ENV: "production" } },
    { name: "fixture-local", entry: "fixture", bindings: { ENV: "production", STAGE: "local" } },
    { name: "fixture-dev", entry: "fixture", bindings: { ENV: "dev" } },
  ]);
  local = await mf.getWorker("fixture-local");
  dev = await mf.getWorker("fixture-dev");
});
after(() => mf.dispose());

async function at(now) {
  assert.equal((await mf.dispatchFetch("http://fixture/__test/clock", { method: "POST", body: JSON.stringify({ now }) })).status, 200);
}

async function get(path, init, worker = null, host = "fixture") {
  const response = worker === null ? await mf.dispatchFetch(`http://${host}${path}`, init) : await worker.fetch(`http://${host}${path}`, init);
  const text = await response.text();
  let body = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: response.status, headers: response.headers, body };
}

const header = (r, name) => r.headers.get(name);

test("several rules are checked in one all-or-nothing call, one list member each", async () => {
  const ip = "192.0.2.100";
  const policy = '"short";q=2;w=10, "long";q=5;w=60';
  // [step, instant, status, RateLimit, X-RateLimit-Remaining, Retry-After]
  const steps = [
    [1, T0, 200, '"short";r=1;t=10, "long";r=4;t=60', "1", null],
    [2, T0, 200, '"short";r=0;t=10, "long";r=3;t=60', "0", null],
    // short denies: long is not charged (still 3).
    [3, T0 + 1 * SECOND, 429, '"short";r=0;t=9, "long";r=3;t=59', "0", "9"],
    [4, T0 + 10 * SECOND, 200, '"short";r=1;t=10, "long";r=2;t=50', "1", null],
    [5, T0 + 10 * SECOND, 200, '"short";r=0;t=10, "long";r=1;t=50', "0", null],
    [6, T0 + 20 * SECOND, 200, '"short";r=1;t=10, "long";r=0;t=40', "0", null],
    // long denies: short would admit but is not charged (still 1).
    [7, T0 + 20 * SECOND, 429, '"short";r=1;t=10, "long";r=0;t=40', "0", "40"],
    [8, T0 + 20 * SECOND, 429, '"short";r=1;t=10, "long";r=0;t=40', "0", "40"],
    [9, T0 + 60 * SECOND, 200, '"short";r=1;t=10, "long";r=4;t=60', "1", null],
  ];
  for (const [step, now, status, rateLimit, remaining, retryAfter] of steps) {
    await at(now);
    const r = await get("/multi", from(ip));
    assert.equal(r.status, status, `step ${step}`);
    assert.equal(header(r, "ratelimit"), rateLimit, `step ${step}`);
    assert.equal(header(r, "ratelimit-policy"), policy, `step ${step}`);
    assert.equal(header(r, "x-ratelimit-remaining"), remaining, `step ${step}`);
    assert.equal(header(r, "retry-after"), retryAfter, `step ${step}`);
  }
});

test("headers: 'legacy', 'draft' and 'none' send what they say; a 429 always has Retry-After and no-store", async () => {
  await at(T0 + 100 * SECOND);
  const ip = "192.0.2.101";
  const expected = {
    legacy: { "x-ratelimit-limit": "1", ratelimit: null, "ratelimit-policy": null },
    draft: { "x-ratelimit-limit": null, ratelimit: '"headers-draft";r=0;t=20', "ratelimit-policy": '"headers-draft";q=1;w=60' },
    none: { "x-ratelimit-limit": null, ratelimit: null, "ratelimit-policy": null },
  };
  for (const [mode, fields] of Object.entries(expected)) {
    const admitted = await get(`/headers/${mode}`, from(ip));
    assert.equal(admitted.status, 200, mode);
    for (const [name, value] of Object.entries(fields)) assert.equal(header(admitted, name), value, `${mode}: ${name}`);
    const denied = await get(`/headers/${mode}`, from(ip));
    assert.equal(denied.status, 429, mode);
    assert.equal(header(denied, "retry-after"), "20", mode);
    assert.equal(header(denied, "cache-control"), "no-store", mode);
    assert.equal(denied.body.retryAfter, 20, mode);
  }
});

test("problemJson answers with the draft's quota-exceeded problem naming the violated policies", async () => {
  await at(T0 + 130 * SECOND);
  await get("/problem", from("192.0.2.102"));
  const r = await get("/problem", from("192.0.2.102"));
  assert.equal(r.status, 429);
  assert.equal(header(r, "content-type"), "application/problem+json");
  assert.deepEqual(r.body, {
    type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
    title: "Request cannot be satisfied as assigned quota has been exceeded",
    status: 429,
    "violated-policies": ["problem"],
    code: "SLOW_DOWN",
    retryAfter: 50,
    limit: 1,
    remaining: 0,
    reset: 50,
  });
});

test("onLimited builds the denial; the rate-limit headers, Retry-After and no-store are added to it", async () => {
  await at(T0 + 150 * SECOND);
  await get("/custom", from("192.0.2.103"));
  const r = await get("/custom", from("192.0.2.103"));
  assert.equal(r.status, 503);
  assert.equal(r.body, "custom: retry in 30s");
  assert.equal(header(r, "retry-after"), "30");
  assert.equal(header(r, "x-ratelimit-remaining"), "0");
  assert.equal(header(r, "ratelimit"), '"custom";r=0;t=30');
  assert.equal(header(r, "cache-control"), "no-store");
});

test("a token bucket's Retry-After is when a token returns, never earlier than its t", async () => {
  await at(T0 + 200 * SECOND);
  const ip = "192.0.2.104";
  for (const remaining of ["2", "1", "0"]) {
    const r = await get("/bucket", from(ip));
    assert.equal(r.status, 200);
    assert.equal(header(r, "x-ratelimit-remaining"), remaining);
    assert.equal(header(r, "ratelimit-policy"), '"bucket";q=3;w=30', "3 at once, refilled in 30 s (6 per 60 s)");
  }
  const denied = await get("/bucket", from(ip));
  assert.equal(denied.status, 429);
  assert.equal(header(denied, "retry-after"), "10", "one token every 10 s");
  assert.equal(header(denied, "ratelimit"), '"bucket";r=0;t=10');
  assert.equal(header(denied, "x-ratelimit-reset"), "30", "full again in 30 s");

  await at(T0 + 210 * SECOND);
  assert.equal((await get("/bucket", from(ip))).status, 200, "the token came back");

  // rate: 0.5 per second with GCRA: one request every 2 s.
  await at(T0 + 220 * SECOND);
  assert.equal((await get("/rate", from(ip))).status, 200);
  const tooSoon = await get("/rate", from(ip));
  assert.equal(tooSoon.status, 429);
  assert.equal(header(tooSoon, "retry-after"), "2");
  assert.equal(header(tooSoon, "ratelimit-policy"), '"rate";q=1;w=2');
});

test("cost charges what the function says, rounded up; a broken cost function fails the request, never admits it", async () => {
  await at(T0 + 300 * SECOND);
  const ip = "192.0.2.105";
  const spend = (cost) => get("/cost", from(ip, { "x-cost": String(cost) }));
  assert.equal(header(await spend(4), "x-ratelimit-remaining"), "6");
  const tooDear = await spend(7);
  assert.equal(tooDear.status, 429);
  assert.equal(header(tooDear, "x-ratelimit-remaining"), "6", "a denied request charges nothing");
  assert.equal(header(await spend(2.5), "x-ratelimit-remaining"), "3");
  assert.equal((await spend("abc")).status, 500);
  assert.equal((await spend(0)).status, 500);
  const never = await spend(11);
  assert.equal(never.status, 429);
  assert.equal(header(never, "retry-after"), null, "no wait admits a cost above the limit");
  assert.equal(never.body.retryAfter, null);
});

test("skip lets a request through unlimited and unheaded; others are limited", async () => {
  await at(T0 + 320 * SECOND);
  const ip = "192.0.2.106";
  for (let i = 0; i < 3; i++) {
    const r = await get("/skip", from(ip, { "x-internal": "yes" }));
    assert.equal(r.status, 200);
    assert.equal(header(r, "x-ratelimit-limit"), null);
    assert.equal(r.body.decision, null, "no decision was taken");
  }
  assert.equal((await get("/skip", from(ip))).status, 200);
  assert.equal((await get("/skip", from(ip))).status, 429);
});

test("the handler reads the decision with c.get('rateLimit')", async () => {
  await at(T0 + 340 * SECOND);
  const r = await get("/keys/ip", from("192.0.2.107"));
  const { decision } = r.body;
  assert.equal(decision.allowed, true);
  assert.equal(decision.bypassed, false);
  assert.equal(decision.limit, 3);
  assert.equal(decision.remaining, 2);
  assert.equal(decision.resetMs, 20 * SECOND);
  assert.equal(decision.retryAfterMs, 0);
  assert.equal(decision.store, "memory");
  assert.deepEqual(decision.keys, ["ip:192.0.2.107"]);
  assert.deepEqual(decision.rules, [{ id: "keys-ip|fixed-window|3|60000|0", name: "keys-ip", algorithm: "fixed-window", limit: 3, windowMs: 60000, burst: 0, keyCapacity: 50000 }]);
  assert.equal(decision.checks.length, 1);
});

test("a custom bypass variable bypasses only where the Worker's environment sets it, on a loopback host", async () => {
  const viaLocal = await get("/bypass", from("192.0.2.108"), local, "localhost");
  assert.equal(header(viaLocal, "x-ratelimit-bypassed"), "true", "the header says bypassed, never which variable");
  for (const host of ["127.0.0.1", "[::1]", "app.localhost"]) assert.equal((await get("/bypass", from("192.0.2.108"), local, host)).status, 200);

  // The same environment on a host that is not loopback (a deployed Worker's zone) is limited.
  const deployed = [];
  for (let i = 0; i < 2; i++) deployed.push(await get("/bypass", from("192.0.2.110"), local, "api.example.com"));
  assert.deepEqual(deployed.map((response) => response.status), [200, 429]);
  assert.equal(header(deployed[1], "x-ratelimit-bypassed"), null);

  // ENV=dev does not bypass a limiter told to look at STAGE.
  await get("/bypass", from("192.0.2.108"), dev);
  const denied = await get("/bypass", from("192.0.2.108", { stage: "local" }), dev);
  assert.equal(denied.status, 429);
  assert.equal(header(denied, "x-ratelimit-bypassed"), null);
});

test("createLimiter limits a plain fetch handler; its key functions get (request, env, ctx)", async () => {
  await at(T0 + 400 * SECOND);
  const ip = "192.0.2.109";
  const first = await get("/plain/a", from(ip));
  assert.equal(first.status, 200);
  assert.deepEqual(first.body.keys, ["ip:192.0.2.109|route:/plain/a|env:production"]);
  assert.equal(header(first, "ratelimit"), '"plain";r=1;t=20');
  assert.equal((await get("/plain/a", from(ip))).status, 200);
  const denied = await get("/plain/a", from(ip));
  assert.equal(denied.status, 429);
  assert.equal(header(denied, "retry-after"), "20");
  assert.equal(denied.body.error, "too many requests");
  assert.equal((await get("/plain/b", from(ip))).status, 200, "route() keys by path here");

  const bypassed = await get("/plain/a", from(ip), dev, "localhost");
  assert.equal(bypassed.status, 200);
  assert.equal(header(bypassed, "x-ratelimit-bypassed"), "true");
});

test("trustForwardedFor keys by the address the trusted proxy appended, falling back to cf-connecting-ip", async () => {
  await at(T0 + 420 * SECOND);
  const proxy = "192.0.2.110";
  const via = (forwarded) => get("/keys/forwarded", from(proxy, { "x-forwarded-for": forwarded }));
  assert.deepEqual((await via("10.0.0.1, 198.51.100.1")).body.decision.keys, ["ip:198.51.100.1"]);
  assert.equal(header(await via("198.51.100.1"), "x-ratelimit-remaining"), "1", "the appended address counts");
  assert.deepEqual((await via("198.51.100.1, garbage")).body.decision.keys, ["ip:192.0.2.110"]);
});

test("attack: rotating the first x-forwarded-for entry never gets past the limit (3)", async () => {
  await at(T0 + 430 * SECOND);
  let admitted = 0;
  for (let i = 0; i < 30; i++) {
    const response = await get("/keys/forwarded", from("192.0.2.111", { "x-forwarded-for": `10.${i}.${i}.${i}, 198.51.100.2` }));
    if (response.status === 200) admitted++;
  }
  assert.equal(admitted, 3);
});

test("ip({ ipv6Prefix: 48 }) groups a whole /48", async () => {
  await at(T0 + 440 * SECOND);
  assert.equal(header(await get("/keys/ipv6-48", from("2001:db8:1:1::1")), "x-ratelimit-remaining"), "2");
  assert.equal(header(await get("/keys/ipv6-48", from("2001:db8:1:ffff::1")), "x-ratelimit-remaining"), "1");
  assert.equal(header(await get("/keys/ipv6-48", from("2001:db8:2::1")), "x-ratelimit-remaining"), "2");
});

test("keys over 512 bytes are hashed whole: long API keys with a common prefix keep apart", async () => {
  await at(T0 + 460 * SECOND);
  const common = "k".repeat(700);
  const use = (suffix) => get("/keys/api", from("192.0.2.111", { "x-api-key": `${common}${suffix}` }));
  assert.equal((await use("a")).status, 200);
  assert.equal((await use("a")).status, 200);
  assert.equal((await use("a")).status, 429);
  assert.equal((await use("b")).status, 200, "not truncated into the same key");
  const noKey = await get("/keys/api", from("192.0.2.111"));
  assert.deepEqual(noKey.body.decision.keys, ["unknown"], "no API key shares the 'unknown' key");
});

test("route() keys by the route's pattern, so path parameters cannot split a limit", async () => {
  await at(T0 + 480 * SECOND);
  const ip = "192.0.2.112";
  assert.deepEqual((await get("/keys/route/1", from(ip))).body.decision.keys, ["ip:192.0.2.112|route:/keys/route/:id"]);
  assert.equal((await get("/keys/route/2", from(ip))).status, 200);
  assert.equal((await get("/keys/route/3", from(ip))).status, 429);
});

test("an async user() falls back to the IP with firstOf()", async () => {
  await at(T0 + 500 * SECOND);
  assert.deepEqual((await get("/keys/user", from("192.0.2.113", { "x-user": "carol" }))).body.decision.keys, ["user:carol"]);
  assert.deepEqual((await get("/keys/user", from("192.0.2.113"))).body.decision.keys, ["ip:192.0.2.113"]);
});
