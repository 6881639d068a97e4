// Block durations and overrides in gateway.config.json (worker/gateway/rule-config.js): blockSec / blockMs validate
// as the library's options do, every error naming its path, and a kv rule refuses them at start-up.
import assert from "node:assert/strict";
import { test } from "node:test";

const { ConfigError, validateConfig } = await import("../../worker/gateway/config.js");

const config = (rule) => ({
  routes: [{ prefix: "/login", methods: ["POST"], upstream: { url: "https://api.example.com/login" }, rules: [{ name: "login", algorithm: "fixed-window", limit: 10, windowSec: 60, key: "ip", ...rule }] }],
  ...(rule.store === "kv" ? { stores: { kv: { binding: "SLUICE_KV" } } } : {}),
});

function refusedAt(rule) {
  try {
    validateConfig(config(rule));
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${error}`);
    return error.path;
  }
  return "(accepted)";
}

test("a rule's blockSec becomes its blockMs; without it the rule throttles", () => {
  assert.equal(validateConfig(config({ blockSec: 300 })).routes[0].rules[0].blockMs, 300_000);
  assert.equal(validateConfig(config({})).routes[0].rules[0].blockMs, undefined);
});

test("bad block durations are refused naming their path; kv cannot keep blocks", () => {
  assert.equal(refusedAt({ blockSec: 0 }), "routes[0].rules[0].blockSec");
  assert.equal(refusedAt({ blockSec: "300" }), "routes[0].rules[0].blockSec");
  assert.equal(refusedAt({ blockMs: 1.5 }), "routes[0].rules[0].blockMs");
  assert.equal(refusedAt({ blockMs: 1000, blockSec: 1 }), "routes[0].rules[0].blockMs");
  assert.equal(refusedAt({ blockSec: 2 ** 40 }), "routes[0].rules[0].blockSec");
  assert.equal(refusedAt({ blockSec: 60, store: "kv" }), "routes[0].rules[0].blockSec");
});

test("a gateway rule's overrides are checked at start-up, naming their path", () => {
  const rule = validateConfig(config({ key: "apiKey:x-api-key", overrides: [{ key: "key:acme", limit: 100 }] })).routes[0].rules[0];
  assert.deepEqual(rule.overrides, [{ key: "key:acme", limit: 100 }]);
  assert.equal(refusedAt({ overrides: [{ key: "key:acme", limit: 0 }] }), "routes[0].rules[0].overrides[0].limit");
  assert.equal(refusedAt({ overrides: [{ prefix: "key:", key: "key:acme", limit: 3 }] }), "routes[0].rules[0].overrides[0].key");
});

test("the running gateway applies a rule's overrides and its block duration", async () => {
  const { createGateway } = await import("../../worker/gateway/gateway.js");
  let now = Date.UTC(2030, 0, 1);
  const upstream = { fetch: async () => new Response("ok") };
  const raw = {
    routes: [
      {
        prefix: "/api",
        methods: ["GET"],
        upstream: { url: "https://api.internal/api", service: "UP" },
        rules: [{ name: `gw-${Math.random().toString(36).slice(2, 10)}`, algorithm: "fixed-window", limit: 2, windowSec: 60, blockSec: 300, key: "apiKey:x-api-key", overrides: [{ key: "key:acme", limit: 5 }] }],
      },
    ],
  };
  const gateway = createGateway(validateConfig(raw), { now: () => now, log() {} });
  const call = (apiKeyValue) => gateway.fetch(new Request("https://gw.test/api", { headers: { "x-api-key": apiKeyValue, "cf-connecting-ip": "192.0.2.1" } }), { UP: upstream }, { waitUntil() {} });
  const statuses = async (key, n) => {
    const seen = [];
    for (let i = 0; i < n; i++) seen.push((await call(key)).status);
    return seen;
  };
  assert.deepEqual(await statuses("acme", 6), [200, 200, 200, 200, 200, 429]);
  assert.deepEqual(await statuses("globex", 3), [200, 200, 429]);
  now += 120_000; // two windows later: both still blocked
  const blocked = await call("acme");
  assert.deepEqual([blocked.status, blocked.headers.get("retry-after")], [429, "180"]);
});
