// Pure middleware behaviour with Hono's own app.request() under Node: no server, no env, no
// execution context. (Everything that depends on workerd is tested in miniflare by the other files.)
import assert from "node:assert/strict";
import { test } from "node:test";

import "./helpers/node-wasm.js";

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
