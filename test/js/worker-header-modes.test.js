// The header modes users of other limiters know (draft-6, draft-7, draft-8), the epoch option of the
// legacy X-RateLimit-Reset, and how two limiters on one route stack each mode's fields.
import assert from "node:assert/strict";
import { test } from "node:test";

const { Hono } = await import("hono");
const { createLimiter } = await import("../../worker/src/sluice.js");
const { rateLimit } = await import("../../worker/src/hono.js");

const T0 = Date.UTC(2030, 0, 1); // a whole minute: fixed windows start here
const clock = () => T0 + 15_000;
const request = () => new Request("https://api.example.com/");

// Three requests to a 2-per-minute fixed window, 15 s into the window: the headers of each.
async function headersOf(options) {
  const limiter = createLimiter({ key: "k", limit: 2, windowSec: 60, algorithm: "fixed-window", clock, ...options });
  const seen = [];
  for (let i = 0; i < 3; i++) seen.push(Object.fromEntries(limiter.headers(await limiter.limit(request(), {}))));
  return seen;
}

test('headers "draft-6": RateLimit-Policy unnamed, RateLimit-Limit, -Remaining and -Reset in seconds', async () => {
  const [first, , denied] = await headersOf({ name: "api-6", headers: "draft-6" });
  assert.deepEqual(first, { "RateLimit-Policy": "2;w=60", "RateLimit-Limit": "2", "RateLimit-Remaining": "1", "RateLimit-Reset": "45" });
  assert.deepEqual(denied, { "RateLimit-Policy": "2;w=60", "RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "45", "Retry-After": "45" });
});

test('headers "draft-7": RateLimit-Policy unnamed and one RateLimit dictionary', async () => {
  const [first, , denied] = await headersOf({ name: "api-7", headers: "draft-7" });
  assert.deepEqual(first, { "RateLimit-Policy": "2;w=60", RateLimit: "limit=2, remaining=1, reset=45" });
  assert.deepEqual(denied, { "RateLimit-Policy": "2;w=60", RateLimit: "limit=2, remaining=0, reset=45", "Retry-After": "45" });
});

test('headers "draft-8" is "draft": named policies and limits', async () => {
  const eight = await headersOf({ name: "api-8", headers: "draft-8" });
  assert.deepEqual(eight[0], { "RateLimit-Policy": '"api-8";q=2;w=60', RateLimit: '"api-8";r=1;t=45' });
  assert.deepEqual(eight[2], { "RateLimit-Policy": '"api-8";q=2;w=60', RateLimit: '"api-8";r=0;t=45', "Retry-After": "45" });
  // A limiter of its own name (so its own counts) in mode "draft" answers the same fields.
  assert.deepEqual((await headersOf({ name: "api-10", headers: "draft" }))[0], { "RateLimit-Policy": '"api-10";q=2;w=60', RateLimit: '"api-10";r=1;t=45' });
});

test('legacyReset "epoch": X-RateLimit-Reset is the Unix time in seconds the quota is back', async () => {
  const [epoch] = await headersOf({ name: "epoch", headers: "legacy", legacyReset: "epoch" });
  assert.equal(epoch["X-RateLimit-Reset"], String((T0 + 60_000) / 1000));
  const [seconds] = await headersOf({ name: "seconds", headers: "legacy" });
  assert.equal(seconds["X-RateLimit-Reset"], "45");
  assert.throws(() => createLimiter({ key: "k", limit: 1, windowSec: 1, legacyReset: "unix" }), { field: "legacyReset" });
});

test("two limiters on one route stack draft-7 and draft-6 fields as one limit: the one with less remaining", async () => {
  for (const headers of ["draft-6", "draft-7"]) {
    const app = new Hono();
    app.use("*", rateLimit({ name: `outer-${headers}`, key: () => "k", limit: 10, windowSec: 60, headers, clock }));
    app.use("*", rateLimit({ name: `inner-${headers}`, key: () => "k", limit: 3, windowSec: 60, headers, clock }));
    app.get("/", (c) => c.text("ok"));
    const response = await app.request("/");
    // The inner limiter heads the response first; the outer one adds its policy to the list.
    assert.equal(response.headers.get("ratelimit-policy"), "3;w=60, 10;w=60", headers);
    if (headers === "draft-6") assert.equal(response.headers.get("ratelimit-remaining"), "2");
    else assert.match(response.headers.get("ratelimit"), /^limit=3, remaining=2, reset=\d+$/);
  }
});
