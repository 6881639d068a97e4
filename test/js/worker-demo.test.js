// The demo Worker in workerd (miniflare), through real requests: the seed scenario, the tiers, keys a
// client cannot split or reset, IPv6 grouping, and the dev bypass. Time is fixed by the fixture's
// injected clock, except in the runs of the shipped Worker itself, which assert relative to its window.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { bundle, from, startWorkers, storeBindings } from "./helpers/worker.js";

const T0 = Date.UTC(2030, 0, 1); // a whole minute: fixed windows of 60 s start here
const SECOND = 1000;

let mf;
let demo; // the shipped Worker, worker/src/index.js, ENV=production
let demoDev; // the same, ENV=dev

before(async () => {
  // Bound as wrangler.toml binds the shipped Worker: SLUICE_DO (the fixture's test object, the demo's
  // own) and SLUICE_KV.
  mf = await startWorkers([
    { name: "fixture", entry: "fixture", bindings: { ENV: "production" }, ...storeBindings("fixture", "fixture", "TestSluiceDurableObject") },
    { name: "demo", entry: "demo", bindings: { ENV: "production" }, ...storeBindings("demo", "demo", "SluiceDurableObject") },
    { name: "demo-dev", entry: "demo", bindings: { ENV: "dev" }, ...storeBindings("demo-dev", "demo", "SluiceDurableObject") },
  ]);
  demo = await mf.getWorker("demo");
  demoDev = await mf.getWorker("demo-dev");
});
after(() => mf.dispose());

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
  // A run that straddles a minute boundary is repeated once with a fresh IP (it cannot straddle twice).
  for (let attempt = 0; attempt < 2; attempt++) {
    const ip = `198.51.100.${20 + attempt}`;
    const started = Date.now();
    const results = [];
    for (let i = 0; i < 7; i++) results.push(limits(await demo.fetch("http://demo/data", from(ip))));
    const finished = Date.now();
    if (Math.floor(started / 60000) !== Math.floor(finished / 60000)) continue;

    const windowEnd = (Math.floor(started / 60000) + 1) * 60000;
    assert.deepEqual(results.map((r) => r.status), [200, 200, 200, 200, 200, 429, 429]);
    assert.deepEqual(results.map((r) => r.remaining), ["4", "3", "2", "1", "0", "0", "0"]);
    for (const r of results.slice(5)) {
      const retryAfter = Number(r.retryAfter);
      assert.ok(retryAfter >= Math.ceil((windowEnd - finished) / 1000) && retryAfter <= Math.ceil((windowEnd - started) / 1000), `${retryAfter}`);
      assert.equal(r.reset, r.retryAfter, "a fixed window resets when it admits again");
    }
    assert.ok(Number(results[6].retryAfter) <= Number(results[5].retryAfter), "counting down");
    return;
  }
  assert.fail("two runs straddled a minute boundary");
});

test("POST /auth/login admits 10 per minute per IP, POST /auth/refresh 30", async () => {
  await at(T0 + 120 * SECOND);
  const post = (path, ip) => mf.dispatchFetch(`http://fixture/demo${path}`, from(ip, {}, { method: "POST" }));
  for (let i = 1; i <= 10; i++) assert.equal((await post("/auth/login", "192.0.2.30")).status, 200, `login ${i}`);
  const denied = await post("/auth/login", "192.0.2.30");
  assert.equal(denied.status, 429);
  assert.match(denied.headers.get("ratelimit-policy"), /^"login";q=10;w=60$/);
  assert.equal((await post("/auth/login", "192.0.2.31")).status, 200, "another IP has its own limit");
  assert.equal((await post("/auth/refresh", "192.0.2.30")).status, 200, "refresh is limited apart from login");

  for (let i = 2; i <= 30; i++) assert.equal((await post("/auth/refresh", "192.0.2.30")).status, 200, `refresh ${i}`);
  assert.equal((await post("/auth/refresh", "192.0.2.30")).status, 429);
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

test("ENV=dev bypasses every limit and says so", async () => {
  for (let i = 0; i < 12; i++) {
    const response = await demoDev.fetch("http://demo/auth/login", from("192.0.2.60", {}, { method: "POST" }));
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-ratelimit-bypassed"), "ENV=dev");
    assert.equal(response.headers.get("x-ratelimit-remaining"), null);
    assert.equal(response.headers.get("ratelimit"), null);
  }
});

test("the shipped Worker serves POST /api/checkout from its Durable Object", async () => {
  const checkout = (token) => demo.fetch("http://demo/api/checkout", from("198.51.100.30", { authorization: `Bearer ${token}` }, { method: "POST" }));
  await checkout("warm-up"); // the object's first call starts it, which the 50 ms timeout is not meant for
  // On a loaded machine a call may still outlast the shipped 50 ms and fall back (to KV, which has
  // counted nothing for this user): such a run is repeated with a fresh user, at most twice.
  for (let attempt = 0; attempt < 3; attempt++) {
    const seen = [];
    for (let i = 0; i < 6; i++) {
      const response = await checkout(`frank-${attempt}`);
      seen.push([response.status, response.status === 200 ? (await response.json()).decidedBy : response.headers.get("x-ratelimit-limit")]);
    }
    if (seen.some(([status, decidedBy]) => status === 200 && decidedBy !== "durable")) continue;
    assert.deepEqual(seen, [[200, "durable"], [200, "durable"], [200, "durable"], [200, "durable"], [200, "durable"], [429, "5"]]);
    return;
  }
  assert.fail("three runs fell back from the Durable Object");
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
