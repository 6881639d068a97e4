// Counting on the response (worker/src/features/response-count/): through the middleware (memory store,
// Node, app.request()). The attacker's test first: failures are what is limited, so a brute-forcer is
// refused after `limit` failures while successes never spend the budget.
import assert from "node:assert/strict";
import { test } from "node:test";

const { Hono } = await import("hono");
const { rateLimit, rateLimitOnResponse, ip } = await import("../../worker/src/hono.js");
const { SluiceConfigError, createResponseLimiter } = await import("../../worker/src/sluice.js");

const T0 = Date.UTC(2030, 0, 1);
const from = (address, password) => ({ method: "POST", headers: { "cf-connecting-ip": address, "x-password": password } });

function loginApp(options) {
  let runs = 0;
  const app = new Hono();
  app.post("/login", rateLimitOnResponse({ key: ip(), limit: 3, windowSec: 60, algorithm: "fixed-window", clock: () => T0, ...options }), (c) => {
    runs++;
    return c.req.header("x-password") === "right" ? c.text("welcome") : c.text("no", 401);
  });
  return { app, runs: () => runs };
}

test("a brute-forcer is refused after `limit` failed responses, before the handler runs; successes spend nothing", async () => {
  const { app, runs } = loginApp({ countWhen: { status: ["400-499"] } });
  const user = "198.51.100.1";
  // Successes never count: 10 logins, all admitted.
  for (let i = 0; i < 10; i++) assert.equal((await app.request("/login", from(user, "right"))).status, 200);
  const attacker = "203.0.113.9";
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push((await app.request("/login", from(attacker, "guess"))).status);
  assert.deepEqual(statuses, [401, 401, 401, 429, 429, 429]);
  assert.equal(runs(), 13, "the refused attempts never reached the handler");
  // Even the right password is refused now: the key has nothing left.
  const refused = await app.request("/login", from(attacker, "right"));
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers.get("retry-after")) > 0);
});

test("skipSuccessfulRequests counts responses of 400 and above, skipFailedRequests those below", async () => {
  const failures = loginApp({ skipSuccessfulRequests: true });
  for (let i = 0; i < 5; i++) assert.equal((await failures.app.request("/login", from("192.0.2.1", "right"))).status, 200);
  const failed = [];
  for (let i = 0; i < 4; i++) failed.push((await failures.app.request("/login", from("192.0.2.1", "guess"))).status);
  assert.deepEqual(failed, [401, 401, 401, 429]);

  const successes = loginApp({ skipFailedRequests: true });
  for (let i = 0; i < 5; i++) assert.equal((await successes.app.request("/login", from("192.0.2.2", "guess"))).status, 401);
  const ok = [];
  for (let i = 0; i < 4; i++) ok.push((await successes.app.request("/login", from("192.0.2.2", "right"))).status);
  assert.deepEqual(ok, [200, 200, 200, 429]);
});

test("a predicate decides, and a handler that throws counts as the 500 Hono answers", async () => {
  const app = new Hono();
  const limit = rateLimitOnResponse({ key: ip(), limit: 2, windowSec: 60, clock: () => T0, countWhen: (response) => response.status >= 500 });
  app.get("/boom", limit, () => {
    throw new Error("upstream down");
  });
  app.get("/fine", limit, (c) => c.text("fine"));
  const client = { headers: { "cf-connecting-ip": "192.0.2.3" } };
  for (let i = 0; i < 3; i++) assert.equal((await app.request("/fine", client)).status, 200);
  assert.deepEqual([(await app.request("/boom", client)).status, (await app.request("/boom", client)).status], [500, 500]);
  assert.equal((await app.request("/fine", client)).status, 429);
});

test("with a block duration, the refusal that exceeds the failures blocks the key", async () => {
  let now = T0;
  const { app } = loginApp({ countWhen: { status: [401] }, blockSec: 600, clock: () => now });
  for (let i = 0; i < 3; i++) await app.request("/login", from("203.0.113.10", "guess"));
  const refused = await app.request("/login", from("203.0.113.10", "right"));
  assert.deepEqual([refused.status, refused.headers.get("retry-after")], [429, "600"]);
  now = T0 + 120_000; // two windows later: still blocked
  assert.equal((await app.request("/login", from("203.0.113.10", "right"))).status, 429);
});

test("counting options are refused naming the field", () => {
  const refused = (options) => {
    try {
      rateLimitOnResponse({ key: ip(), limit: 3, windowSec: 60, ...options });
    } catch (error) {
      assert.ok(error instanceof SluiceConfigError, String(error));
      return error.field;
    }
    return "(accepted)";
  };
  assert.equal(refused({ countWhen: { status: [99] } }), "countWhen.status[0]");
  assert.equal(refused({ countWhen: { status: [401, "500-400"] } }), "countWhen.status[1]");
  assert.equal(refused({ countWhen: { status: ["4xx"] } }), "countWhen.status[0]");
  assert.equal(refused({ countWhen: { status: [] } }), "countWhen.status");
  assert.equal(refused({ countWhen: { statuses: [401] } }), "countWhen.statuses");
  assert.equal(refused({ countWhen: 401 }), "countWhen");
  assert.equal(refused({ skipFailedRequests: "yes" }), "skipFailedRequests");
  assert.equal(refused({ skipFailedRequests: true, skipSuccessfulRequests: true }), "skipFailedRequests");
  assert.equal(refused({ countWhen: { status: [401] }, skipSuccessfulRequests: true }), "countWhen");
  assert.equal(refused({ countWhen: { status: [401, "500-599"] } }), "(accepted)");
});

test("createResponseLimiter: check before the handler, settle after; only matching responses count", async () => {
  const limiter = createResponseLimiter({ key: ip(), limit: 2, windowSec: 60, clock: () => T0, countWhen: { status: [401, 403] } });
  let runs = 0;
  const handle = async (request) => {
    const decision = await limiter.check(request);
    if (!decision.allowed) return limiter.limitedResponse(decision);
    runs++;
    const response = new Response("x", { status: request.headers.get("x-password") === "right" ? 200 : 401 });
    return limiter.withHeaders(response, await limiter.settle(decision, response, request));
  };
  const request = (password) => new Request("https://example.test/login", { method: "POST", headers: { "cf-connecting-ip": "192.0.2.77", "x-password": password } });
  const seen = [];
  for (const password of ["right", "guess", "right", "guess", "right", "guess"]) seen.push((await handle(request(password))).status);
  assert.deepEqual(seen, [200, 401, 200, 401, 429, 429]);
  assert.equal(runs, 4);
  assert.throws(() => createResponseLimiter({ key: ip(), limit: 2, windowSec: 60 }), (error) => error instanceof SluiceConfigError && error.field === "countWhen");
});

// Cost from the origin (features/response-count/cost.js).
function costApp(costHeader, options = {}) {
  const app = new Hono();
  const limiter = rateLimitOnResponse({ key: ip(), limit: 100, windowSec: 60, algorithm: "fixed-window", clock: () => T0, costFrom: { header: "x-sluice-cost", max: 50, default: 5 }, ...options });
  app.get("/query", limiter, (c) => {
    const value = costHeader(c);
    return value === undefined ? c.text("rows") : c.text("rows", 200, { "x-sluice-cost": value });
  });
  return { app, limiter };
}

test("an origin's hostile or oversized cost header is bounded: above max charges max, garbage charges the default, all counted", async () => {
  const values = [undefined, "-5", "1e9", "0x10", "3.5", "1,40", "", "0", "99999999999999999999", "7", "  12  "];
  let next = 0;
  const { app, limiter } = costApp(() => values[next++]);
  const client = { headers: { "cf-connecting-ip": "192.0.2.40" } };
  const remaining = [];
  for (let i = 0; i < values.length; i++) {
    const response = await app.request("/query", client);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-sluice-cost"), null, "the origin's cost header never reaches the client");
    remaining.push(Number(response.headers.get("x-ratelimit-remaining")));
  }
  // The default (5) when missing or not a whole number from 1 up; max (50) for 10^20; then 7; then 12 with
  // only 3 left: the key is drained (it cannot go below 0, and a charge is all or nothing).
  assert.deepEqual(remaining, [95, 90, 85, 80, 75, 70, 65, 60, 10, 3, 0]);
  assert.deepEqual(limiter.costCounters, { fromHeader: 2, clamped: 1, missing: 1, invalid: 7, exhausted: 1 });
  // Nothing left: the next request is refused before the handler.
  assert.equal((await app.request("/query", client)).status, 429);
});

test("costFrom options are refused naming the field", () => {
  const refused = (costFrom, extra = {}) => {
    try {
      rateLimitOnResponse({ key: ip(), limit: 3, windowSec: 60, costFrom, ...extra });
    } catch (error) {
      assert.ok(error instanceof SluiceConfigError, String(error));
      return error.field;
    }
    return "(accepted)";
  };
  assert.equal(refused({ header: "x cost" }), "costFrom.header");
  assert.equal(refused({ header: "x-cost", max: 0 }), "costFrom.max");
  assert.equal(refused({ header: "x-cost", max: 10, default: 11 }), "costFrom.default");
  assert.equal(refused({ header: "x-cost", min: 1 }), "costFrom.min");
  assert.equal(refused("x-cost"), "costFrom");
  assert.equal(refused({ header: "x-cost" }, { cost: 2 }), "costFrom");
  assert.equal(refused({ header: "x-cost" }), "(accepted)");
});

test("rateLimit refuses the options of counting on the response, naming rateLimitOnResponse; rateLimitOnResponse needs one", () => {
  const refusal = (build) => {
    try {
      build();
    } catch (error) {
      assert.ok(error instanceof SluiceConfigError, String(error));
      return [error.field, /rateLimitOnResponse/.test(error.message)];
    }
    return ["(accepted)", false];
  };
  const base = { key: ip(), limit: 3, windowSec: 60 };
  for (const [field, value] of [["countWhen", { status: [401] }], ["skipFailedRequests", true], ["skipSuccessfulRequests", true], ["costFrom", { header: "x-cost" }]]) {
    assert.deepEqual(refusal(() => rateLimit({ ...base, [field]: value })), [field, true], field);
  }
  assert.deepEqual(refusal(() => rateLimitOnResponse(base)), ["countWhen", true]);
});

// A response that is not counted spent nothing: its rate-limit headers say what is left after it, the
// same as before it, not the check's peek (what a charge of the check's cost would have left).
test("a response that is not counted says what is left: nothing was spent", async () => {
  const { app } = loginApp({ countWhen: { status: [401] }, headers: "both" });
  const seen = [];
  for (const password of ["right", "guess", "right", "right"]) {
    const response = await app.request("/login", from("192.0.2.78", password));
    seen.push([response.status, response.headers.get("x-ratelimit-remaining"), response.headers.get("ratelimit")]);
  }
  // limit 3: a success leaves 3, the failure 2, the successes after it 2.
  assert.deepEqual(
    seen.map(([status, remaining, draft]) => [status, remaining, /;r=(\d+)/.exec(draft)?.[1]]),
    [[200, "3", "3"], [401, "2", "2"], [200, "2", "2"], [200, "2", "2"]],
  );

  const limiter = createResponseLimiter({ key: ip(), limit: 3, windowSec: 60, clock: () => T0, countWhen: { status: [401] } });
  const remaining = [];
  for (const status of [200, 401, 200]) {
    const request = new Request("https://example.test/login", { method: "POST", headers: { "cf-connecting-ip": "192.0.2.79" } });
    const decision = await limiter.check(request);
    const settled = await limiter.settle(decision, new Response("x", { status }), request);
    remaining.push(Number(limiter.withHeaders(new Response("x", { status }), settled).headers.get("x-ratelimit-remaining")));
  }
  assert.deepEqual(remaining, [3, 2, 2]);
});

test("a charge refused because requests in flight took the last units: the response says nothing is left, not its stale peek, and no Retry-After", async () => {
  // limit 2: three failures are checked (each peek leaves 1) before any is answered; the first two are
  // charged, the third's charge finds nothing left. Its response was served, so it is not a 429, but its
  // headers must say what is left now (0).
  let release;
  const gate = new Promise((resolve) => (release = resolve));
  const app = new Hono();
  app.post("/login", rateLimitOnResponse({ key: ip(), limit: 2, windowSec: 60, algorithm: "fixed-window", clock: () => T0, countWhen: { status: [401] }, headers: "both" }), async (c) => {
    await gate;
    return c.text("no", 401);
  });
  const pending = [0, 1, 2].map(() => app.request("/login", from("192.0.2.90", "guess")));
  await new Promise((resolve) => setTimeout(resolve, 10));
  release();
  const responses = await Promise.all(pending);
  const seen = responses.map((r) => [r.status, r.headers.get("x-ratelimit-remaining"), /;r=(\d+)/.exec(r.headers.get("ratelimit") ?? "")?.[1], r.headers.get("retry-after")]);
  // Answered in order: charged to 1, charged to 0, refused (nothing left).
  assert.deepEqual(seen, [[401, "1", "1", null], [401, "0", "0", null], [401, "0", "0", null]]);
  assert.equal((await app.request("/login", from("192.0.2.90", "guess"))).status, 429);

  const limiter = createResponseLimiter({ key: ip(), limit: 2, windowSec: 60, clock: () => T0, countWhen: { status: [401] } });
  const request = () => new Request("https://example.test/login", { method: "POST", headers: { "cf-connecting-ip": "192.0.2.91" } });
  const checked = [];
  for (let i = 0; i < 3; i++) checked.push(await limiter.check(request()));
  assert.deepEqual(checked.map((d) => [d.allowed, d.remaining]), [[true, 1], [true, 1], [true, 1]]);
  const settled = [];
  for (const decision of checked) settled.push(await limiter.settle(decision, new Response("no", { status: 401 }), request()));
  assert.deepEqual(settled.map((d) => [d.allowed, d.remaining]), [[true, 1], [true, 0], [true, 0]], "the refused charge's decision says nothing is left");
  const headers = limiter.withHeaders(new Response("no", { status: 401 }), settled[2]).headers;
  assert.equal(headers.get("x-ratelimit-remaining"), "0");
  assert.equal(headers.get("retry-after"), null, "a served response carries no Retry-After");
});
