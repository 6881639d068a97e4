// Pure middleware behaviour with Hono's own app.request() under Node: no server, no env, no
// execution context. (Everything that depends on workerd is tested in miniflare by the other files.)
import assert from "node:assert/strict";
import { test } from "node:test";


const { Hono } = await import("hono");
const { rateLimit, ip } = await import("../../worker/src/hono.js");

const T0 = Date.UTC(2030, 0, 1);
const clock = () => T0;
const client = { headers: { "cf-connecting-ip": "192.0.2.1" } };

test("works without env or execution context, and never bypasses without an env", async () => {
  const app = new Hono();
  app.get("/", rateLimit({ name: "hono-noenv", key: ip(), limit: 1, windowSec: 60, algorithm: "fixed-window", clock }), (c) => c.text("ok"));
  assert.equal((await app.request("/", client)).status, 200);
  assert.equal((await app.request("/", client)).status, 429);
});

test("responses with immutable headers still get the rate-limit headers", async () => {
  const app = new Hono();
  app.get("/", rateLimit({ name: "hono-redirect", key: ip(), limit: 5, windowSec: 60, algorithm: "fixed-window", clock }), () => Response.redirect("https://example.com/", 302));
  const response = await app.request("/", client);
  assert.equal(response.status, 302);
  assert.equal(response.headers.get("location"), "https://example.com/");
  assert.equal(response.headers.get("x-ratelimit-remaining"), "4");
});

test("a handler that throws still answers with the rate-limit headers on its error response", async () => {
  const app = new Hono();
  app.onError((error, c) => c.text(error.message, 500));
  app.get("/", rateLimit({ name: "hono-throw", key: ip(), limit: 5, windowSec: 60, algorithm: "fixed-window", clock }), () => {
    throw new Error("boom");
  });
  const response = await app.request("/", client);
  assert.equal(response.status, 500);
  assert.equal(response.headers.get("x-ratelimit-remaining"), "4");
});

test("two middlewares on one route: both must admit, and c.get('rateLimit') is the last one's", async () => {
  const app = new Hono();
  app.use("*", rateLimit({ name: "hono-global", key: ip(), limit: 3, windowSec: 60, algorithm: "fixed-window", clock }));
  app.get("/", rateLimit({ name: "hono-route", key: ip(), limit: 1, windowSec: 60, algorithm: "fixed-window", clock }), (c) => c.json(c.get("rateLimit").rules.map((rule) => rule.name)));
  const first = await app.request("/", client);
  assert.deepEqual(await first.json(), ["hono-route"]);
  assert.equal((await app.request("/", client)).status, 429);
});

test("two limiters on one response: draft fields list both, X-RateLimit-* is the one with less left, whichever denies", async () => {
  const app = new Hono();
  app.use("/api/*", rateLimit({ name: "stack-api", key: ip(), limit: 3, windowSec: 60, algorithm: "fixed-window", clock }));
  app.post("/api/buy", rateLimit({ name: "stack-buy", key: ip(), limit: 1, windowSec: 30, algorithm: "fixed-window", clock }), (c) => c.text("bought"));
  app.get("/api/look", (c) => c.text("looked"));
  const fields = (response) => ["x-ratelimit-limit", "x-ratelimit-remaining", "ratelimit-policy", "ratelimit", "retry-after"].map((name) => response.headers.get(name));
  const buy = () => app.request("/api/buy", { method: "POST", ...client });

  const bought = await buy();
  assert.equal(bought.status, 200);
  // stack-buy (inner) has 0 left, stack-api (outer) 2: the legacy trio is stack-buy's.
  assert.deepEqual(fields(bought), ["1", "0", '"stack-buy";q=1;w=30, "stack-api";q=3;w=60', '"stack-buy";r=0;t=30, "stack-api";r=2;t=60', null]);

  const refused = await buy();
  assert.equal(refused.status, 429);
  assert.deepEqual(fields(refused), ["1", "0", '"stack-buy";q=1;w=30, "stack-api";q=3;w=60', '"stack-buy";r=0;t=30, "stack-api";r=1;t=60', "30"]);
  assert.equal((await refused.json()).limit, 1, "the body is the denying limiter's");

  const looked = await app.request("/api/look", client);
  assert.deepEqual(fields(looked), ["3", "0", '"stack-api";q=3;w=60', '"stack-api";r=0;t=60', null], "one limiter: its own fields only");
});
