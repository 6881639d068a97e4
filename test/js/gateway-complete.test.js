// Issue 23, a complete gateway: `store: "redis"` and leases configurable per rule of a route; a route
// whose upstream secret, service binding or store binding (or Redis secret) is missing fails at
// start-up naming the field (createGateway's `env`, which the shipped Worker passes), instead of
// falling back quietly.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { startBridge } from "./helpers/redis-bridge.js";
import { startRedis } from "./helpers/redis-server.js";

const { ConfigError, validateConfig } = await import("../../worker/gateway/config.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");

const rule = (name, extra = {}) => ({ name, algorithm: "fixed-window", limit: 2, windowSec: 60, key: "ip", ...extra });
const route = (prefix, rules, upstream = {}) => ({ prefix, methods: ["GET"], upstream: { url: `https://up.internal${prefix}`, service: "UP", ...upstream }, rules });
const UP = { fetch: () => new Response("ok") };
const FAKE_DO = { idFromName() {}, get() {} };

describe("start-up with the deployment's env", () => {
  const cases = [
    ["the upstream secret", [route("/a", [rule("s1")], { auth: { secret: "API_TOKEN" } })], { UP }, "routes[0].upstream.auth.secret", /API_TOKEN/],
    ["an empty upstream secret", [route("/a", [rule("s2")], { auth: { secret: "API_TOKEN" } })], { UP, API_TOKEN: "" }, "routes[0].upstream.auth.secret", /API_TOKEN/],
    ["the service binding", [route("/a", [rule("s3")])], {}, "routes[0].upstream.service", /UP/],
    ["a durable rule's binding", [route("/a", [rule("s4")]), route("/b", [rule("s5", { store: "durable" })])], { UP }, "routes[1].rules[0].store", /SLUICE_DO/],
    ["a kv rule's binding", [route("/a", [rule("s6", { store: "kv" })])], { UP }, "routes[0].rules[0].store", /SLUICE_KV/],
    ["a redis rule's URL", [route("/a", [rule("s7", { store: "redis" })])], { UP, UPSTASH_REDIS_REST_TOKEN: "t" }, "routes[0].rules[0].store", /UPSTASH_REDIS_REST_URL/],
    ["a redis rule's token", [route("/a", [rule("s8", { store: "redis" })])], { UP, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:1" }, "routes[0].rules[0].store", /UPSTASH_REDIS_REST_TOKEN/],
    ["a lockout rule's binding", [route("/a", [{ name: "s9", kind: "lockout", key: "body:username" }])], { UP }, "routes[0].rules[0].store", /SLUICE_DO/],
  ];
  for (const [what, routes, env, field, named] of cases) {
    test(`a missing ${what} fails createGateway, naming ${field}`, () => {
      assert.throws(
        () => createGateway(validateConfig({ routes }), { env, log() {} }),
        (error) => error instanceof ConfigError && error.path === field && named.test(error.problem),
      );
    });
  }

  test("the secret's value never appears in the error", () => {
    const routes = [route("/a", [rule("s10", { store: "redis" })], { auth: { secret: "API_TOKEN" } })];
    const env = { UP, API_TOKEN: "value-that-must-not-leak", UPSTASH_REDIS_REST_TOKEN: "another-value-that-must-not-leak" };
    assert.throws(
      () => createGateway(validateConfig({ routes }), { env, log() {} }),
      (error) => error instanceof ConfigError && !error.message.includes("must-not-leak"),
    );
  });

  test("with every binding and secret present it starts; a rule in bypass needs none", () => {
    const routes = [route("/a", [rule("s11", { store: "durable" }), rule("s12", { store: "kv", mode: "bypass" })], { auth: { secret: "API_TOKEN" } })];
    assert.doesNotThrow(() => createGateway(validateConfig({ routes }), { env: { UP, API_TOKEN: "x", SLUICE_DO: FAKE_DO }, log() {} }));
  });
});

describe("per-rule stores and leases", () => {
  test("redis, kv, durable with and without a lease of its own: one limiter group each, memory first, durable last", () => {
    const config = validateConfig({
      routes: [
        route("/a", [
          rule("g1", { store: "durable" }),
          rule("g2", { store: "redis" }),
          rule("g3", { store: "durable", lease: { leaseMs: 1000 } }),
          rule("g4"),
          rule("g5", { store: "kv" }),
          rule("g6", { store: "durable", lease: { leaseMs: 1000 } }),
          rule("g7", { store: "durable", lease: false }),
        ]),
      ],
    });
    assert.deepEqual(config.routes[0].storeGroups, [[3], [4], [1], [0], [2, 5], [6]]);
    // The rule's leaseMs, the host's defaults for the rest (main's leases added `refill`).
    const { leaseMs, ...defaults } = config.routes[0].rules[2].lease;
    assert.equal(leaseMs, 1000);
    assert.deepEqual(Object.keys(defaults).sort(), ["maxKeys", "maxLeaseUnits", "refill"]);
    assert.equal(config.routes[0].rules[6].lease, false);
  });

  for (const [extra, field] of [
    [{ store: "kv", lease: true }, "routes[0].rules[0].lease"],
    [{ store: "memory", lease: true }, "routes[0].rules[0].lease"],
    [{ store: "durable", lease: { leaseMs: 0 } }, "routes[0].rules[0].lease.leaseMs"],
    [{ store: "durable", lease: { often: 1 } }, "routes[0].rules[0].lease.often"],
    [{ store: "durable", lease: "yes" }, "routes[0].rules[0].lease"],
  ]) {
    test(`${JSON.stringify(extra)} is refused, naming ${field}`, () => {
      assert.throws(
        () => validateConfig({ routes: [route("/a", [rule("bad", extra)])] }),
        (error) => error instanceof ConfigError && error.path === field,
      );
    });
  }

  test("stores.redis is validated by the host, naming the field", () => {
    assert.throws(
      () => validateConfig({ routes: [route("/a", [rule("r0", { store: "redis" })])], stores: { redis: { fallback: ["durable"] } } }),
      (error) => error instanceof ConfigError && error.path === "stores.redis.fallback[0]",
    );
    assert.throws(
      () => validateConfig({ routes: [route("/a", [rule("r1", { store: "redis" })])], stores: { redis: { shards: 2 } } }),
      (error) => error instanceof ConfigError && error.path === "stores.redis.shards",
    );
  });

  test("two rules of one name must agree on their lease", () => {
    assert.throws(
      () => validateConfig({ routes: [route("/a", [rule("same", { store: "durable", lease: true })]), route("/b", [rule("same", { store: "durable" })])] }),
      (error) => error instanceof ConfigError && error.path === "routes[1].rules[0].name",
    );
  });
});

describe("a route on store redis, against a real redis-server", () => {
  const TOKEN = "gateway-redis-token-5b1e";
  let redis;
  let bridge;
  before(async () => {
    redis = await startRedis();
    bridge = await startBridge({ redisPort: redis.port, token: TOKEN, exclude: [redis.port] });
  });
  after(async () => {
    await bridge?.stop();
    await redis?.stop();
  });

  test("the rule is counted in Redis: every decision is a round trip, and the limit holds", async () => {
    const raw = { routes: [route("/r", [rule("redis-shared", { store: "redis", limit: 3 })])], stores: { redis: { fallback: [], timeoutMs: 5000 } } };
    const env = { UP, UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: TOKEN };
    const first = createGateway(validateConfig(raw), { env, log() {} });
    const statuses = [];
    for (let i = 0; i < 5; i++) {
      const response = await first.fetch(new Request("https://gw.test/r/x", { headers: { "cf-connecting-ip": "192.0.2.77" } }), env, { waitUntil() {} });
      await response.arrayBuffer();
      statuses.push(response.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    assert.ok(bridge.requests >= 5, `${bridge.requests} requests reached Redis`);
  });
});
