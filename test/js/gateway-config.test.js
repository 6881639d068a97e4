// The gateway configuration: the shipped example validates, every kind of error names its field,
// SLUICE_CONFIG overrides the bundled file, and an invalid configuration stops the Worker at start-up.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Miniflare } from "miniflare";
import { FIXTURE_CONFIG, ROOT, startGateway } from "./fixtures/gateway/harness.js";
import { workerOptions } from "./helpers/worker.js";

const { ConfigError, resolveConfig, validateConfig } = await import("../../worker/gateway/config.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");
const { isolateTestHooks } = await import("../../worker/src/engine/isolate.js");

const SHIPPED = JSON.parse(readFileSync(join(ROOT, "gateway.config.json"), "utf8"));

// A minimal valid configuration; each error case below changes one thing in a fresh copy.
function base() {
  return {
    routes: [
      {
        prefix: "/v1/a",
        methods: ["GET"],
        upstream: { url: "https://api.example.com/a", auth: { secret: "TOKEN" } },
        rules: [{ name: "a-ip", algorithm: "fixed-window", limit: 10, windowSec: 60, key: "ip" }],
      },
      {
        prefix: "/v1/b",
        methods: ["GET", "POST"],
        upstream: { url: "https://api.example.com/b" },
        rules: [
          { name: "b-ip", algorithm: "token-bucket", limit: 5, windowMs: 1000, burst: 10, key: ["ip", "route"] },
          { name: "b-user", algorithm: "gcra", limit: 60, windowSec: 60, key: "user", mode: "shadow" },
        ],
      },
      {
        prefix: "/v1/c",
        methods: ["GET"],
        upstream: { url: "https://api.example.com/c" },
        rules: [{ name: "c-key", algorithm: "sliding-log", limit: 3, windowSec: 1, key: "apiKey:X-Api-Key" }],
      },
    ],
    admin: { path: "/_sluice/metrics", tokenSecret: "ADMIN_TOKEN" },
  };
}

function rejects(mutate, path, problemPattern) {
  const config = base();
  mutate(config);
  assert.throws(
    () => validateConfig(config, "test.json"),
    (error) => {
      assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${error}`);
      assert.equal(error.path, path);
      assert.match(error.problem, problemPattern);
      assert.ok(error.message.startsWith(`invalid gateway configuration (test.json): ${path}: `), error.message);
      return true;
    },
  );
}

describe("the shipped gateway.config.json", () => {
  test("validates", () => {
    const config = validateConfig(SHIPPED, "gateway.config.json");
    assert.ok(config.routes.length >= 2);
    for (const route of config.routes) assert.ok(route.rules.length >= 1);
  });

  test("uses every mode, a rollout, several algorithms and key shapes, the admin path and analytics", () => {
    const config = validateConfig(SHIPPED);
    const rules = config.routes.flatMap((route) => route.rules);
    assert.ok(rules.some((rule) => rule.mode === "shadow"));
    assert.ok(rules.some((rule) => rule.rollout > 0 && rule.rollout < 1));
    assert.ok(new Set(rules.map((rule) => rule.algorithm)).size >= 3);
    assert.ok(rules.some((rule) => rule.key.length > 1));
    assert.notEqual(config.admin, null);
    assert.equal(config.analytics.binding, "SLUICE_ANALYTICS");
  });

  test("builds, limiters included, as the shipped Worker builds it at start-up (worker-demo.test.js serves it)", () => {
    const gateway = createGateway(resolveConfig(SHIPPED, {}));
    assert.deepEqual(gateway.config.routes.map((route) => route.prefix), ["/auth/login", "/auth/refresh", "/api", "/api/checkout", "/data", "/ws"]);
    const checkout = gateway.config.routes[3];
    assert.deepEqual(checkout.storeGroups.map((group) => group.map((i) => checkout.rules[i].name)), [["api"], ["checkout"]]);
  });

  test("the test fixture configuration validates too", () => {
    validateConfig(FIXTURE_CONFIG);
  });
});

describe("validated rules take the limiter options' shape", () => {
  const config = validateConfig(base());

  test("windows in ms, burst 0 for none, keys as canonical parts, defaults applied: the host's rule plus the gateway's fields", () => {
    assert.deepEqual({ ...config.routes[0].rules[0] }, {
      id: "a-ip|fixed-window|10|60000|0",
      keyCapacity: 50_000,
      name: "a-ip",
      algorithm: "fixed-window",
      limit: 10,
      windowMs: 60_000,
      burst: 0,
      key: ["ip"],
      store: "memory",
      mode: "enforce",
      rollout: 1,
    });
    assert.deepEqual([...config.routes[1].rules[0].key], ["ip", "route"]);
    assert.equal(config.routes[1].rules[0].windowMs, 1000);
    assert.equal(config.routes[1].rules[0].burst, 10);
    assert.deepEqual([...config.routes[2].rules[0].key], ["apiKey:x-api-key"]);
  });

  test("upstream defaults: 10 s for the head, 60 s of body silence, authorization Bearer, nothing extra forwarded, upstream cache policy", () => {
    const upstream = config.routes[0].upstream;
    assert.equal(upstream.timeoutMs, 10_000);
    assert.equal(upstream.bodyTimeoutMs, 60_000);
    assert.deepEqual({ ...upstream.auth }, { secret: "TOKEN", header: "authorization", scheme: "Bearer" });
    assert.deepEqual([...upstream.forwardHeaders], []);
    assert.equal(upstream.cacheControl, "upstream");
    assert.equal(upstream.origin, "https://api.example.com");
    assert.equal(upstream.basePath, "/a");
  });

  test("the result is frozen", () => {
    assert.ok(Object.isFrozen(config) && Object.isFrozen(config.routes[0].rules[0]) && Object.isFrozen(config.routes[0].upstream));
  });

  test("a shadow-only route cannot block; bypass rules are not active", () => {
    const shadowOnly = base();
    shadowOnly.routes[0].rules = [
      { name: "s", algorithm: "fixed-window", limit: 1, windowSec: 1, key: "ip", mode: "shadow" },
      { name: "b", algorithm: "fixed-window", limit: 1, windowSec: 1, key: "ip", mode: "bypass" },
      { name: "r", algorithm: "fixed-window", limit: 1, windowSec: 1, key: "ip", rollout: 0 },
    ];
    const route = validateConfig(shadowOnly).routes[0];
    assert.equal(route.canBlock, false);
    assert.deepEqual([...route.activeRuleIndexes], [0, 2]);
    assert.equal(validateConfig(base()).routes[0].canBlock, true);
  });
});

describe("every kind of configuration error names its field", () => {
  test("the document and its routes", () => {
    rejects((c) => (c.route = []), "route", /unknown field/);
    rejects((c) => (c.routes = []), "routes", /at least 1/);
    rejects((c) => (c.routes = {}), "routes", /must be an array/);
    rejects((c) => (c.routes[1] = "x"), "routes[1]", /must be an object/);
    rejects((c) => (c.routes[2].upstreams = {}), "routes[2].upstreams", /unknown field/);
    rejects((c) => delete c.routes[0].upstream, "routes[0].upstream", /required/);
    rejects((c) => delete c.routes[2].rules, "routes[2].rules", /open proxy/);
    rejects((c) => (c.routes[2].rules = []), "routes[2].rules", /at least 1/);
    rejects(
      (c) => (c.routes[0].rules = Array.from({ length: 17 }, (_, i) => ({ ...c.routes[0].rules[0], name: `r${i}` }))),
      "routes[0].rules",
      /at most 16/,
    );
  });

  test("prefixes", () => {
    rejects((c) => (c.routes[1].prefix = "v1/b"), "routes[1].prefix", /a path like/);
    rejects((c) => (c.routes[1].prefix = "/v1/b/"), "routes[1].prefix", /a path like/);
    rejects((c) => (c.routes[1].prefix = "/v1//b"), "routes[1].prefix", /a path like/);
    rejects((c) => (c.routes[1].prefix = "/v1/%2e%2e"), "routes[1].prefix", /a path like/);
    rejects((c) => (c.routes[1].prefix = "/v1/.."), "routes[1].prefix", /dot segment/);
    rejects((c) => (c.routes[1].prefix = "/v1\\b"), "routes[1].prefix", /a path like/);
    rejects((c) => (c.routes[1].prefix = `/${"a".repeat(96)}`), "routes[1].prefix", /at most 96/);
    rejects((c) => (c.routes[2].prefix = "/v1/a"), "routes[2].prefix", /already the prefix of routes\[0\]/);
  });

  test("methods", () => {
    rejects((c) => (c.routes[0].methods = []), "routes[0].methods", /at least 1/);
    rejects((c) => (c.routes[0].methods = ["GET", "get"]), "routes[0].methods[1]", /one of "GET"/);
    rejects((c) => (c.routes[0].methods = ["TRACE"]), "routes[0].methods[0]", /one of/);
    rejects((c) => (c.routes[0].methods = ["CONNECT"]), "routes[0].methods[0]", /one of/);
    rejects((c) => (c.routes[1].methods = ["GET", "POST", "GET"]), "routes[1].methods", /GET twice/);
  });

  test("rule names, algorithms, limits and windows", () => {
    rejects((c) => delete c.routes[2].rules[0].name, "routes[2].rules[0].name", /non-empty string/);
    rejects((c) => (c.routes[2].rules[0].name = 'a"b'), "routes[2].rules[0].name", /letters, digits/);
    rejects((c) => (c.routes[1].rules[1].name = "b-ip"), "routes[1].rules[1].name", /already the name of routes\[1\]\.rules\[0\]/);
    rejects((c) => (c.routes[1].rules[0].name = "a-ip"), "routes[1].rules[0].name", /defined differently in routes\[0\]\.rules\[0\]/);
    rejects((c) => (c.routes[0].rules[0].algorithm = "leaky"), "routes[0].rules[0].algorithm", /one of fixed-window, sliding-log/);
    rejects((c) => delete c.routes[0].rules[0].algorithm, "routes[0].rules[0].algorithm", /is required: one of fixed-window/);
    rejects((c) => (c.routes[2].rules[0].limit = 0), "routes[2].rules[0].limit", /whole number from 1/);
    rejects((c) => (c.routes[2].rules[0].limit = -5), "routes[2].rules[0].limit", /whole number from 1/);
    rejects((c) => (c.routes[2].rules[0].limit = 1.5), "routes[2].rules[0].limit", /whole number/);
    rejects((c) => (c.routes[2].rules[0].limit = NaN), "routes[2].rules[0].limit", /got NaN/);
    rejects(
      (c) => Object.assign(c.routes[1].rules[1], { limit: 2 ** 31, windowSec: 0.001 }),
      "routes[1].rules[1].limit",
      /out of range for gcra/,
    );
    rejects((c) => (c.routes[2].rules[0].limit = "10"), "routes[2].rules[0].limit", /whole number/);
    rejects((c) => (c.routes[2].rules[0].limit = 2 ** 31 + 1), "routes[2].rules[0].limit", /2147483648/);
    rejects((c) => delete c.routes[2].rules[0].windowSec, "routes[2].rules[0].windowSec", /is missing.*or windowMs/);
    rejects((c) => (c.routes[2].rules[0].windowMs = 1000), "routes[2].rules[0].windowMs", /cannot be given with windowSec/);
    rejects((c) => (c.routes[2].rules[0].windowSec = 0), "routes[2].rules[0].windowSec", /positive number of seconds/);
    rejects((c) => (c.routes[2].rules[0].windowSec = -1), "routes[2].rules[0].windowSec", /positive number of seconds/);
    rejects((c) => (c.routes[2].rules[0].windowSec = 0.0005), "routes[2].rules[0].windowSec", /whole number of milliseconds/);
    rejects((c) => (c.routes[2].rules[0].windowSec = 1.0001), "routes[2].rules[0].windowSec", /whole number of milliseconds/);
    rejects((c) => (c.routes[1].rules[0].windowMs = 0), "routes[1].rules[0].windowMs", /whole number of milliseconds, at least 1/);
    rejects((c) => (c.routes[1].rules[0].windowMs = 2 ** 36 + 1), "routes[1].rules[0].windowMs", /out of range for token-bucket/);
    rejects((c) => (c.routes[2].rules[0].limit = 100_000), "routes[2].rules[0].limit", /sliding-log.*keyCapacity/);
    rejects((c) => (c.routes[2].rules[0].keyCapacity = 0), "routes[2].rules[0].keyCapacity", /whole number from 1/);
    rejects((c) => (c.routes[0].rules[0].windowsec = 60), "routes[0].rules[0].windowsec", /unknown field/);
  });

  test("bursts, keys, stores, modes and rollouts", () => {
    rejects((c) => (c.routes[0].rules[0].burst = 5), "routes[0].rules[0].burst", /applies to token-bucket, leaky-bucket and gcra, not fixed-window/);
    rejects((c) => (c.routes[1].rules[0].burst = 0), "routes[1].rules[0].burst", /whole number from 1/);
    rejects((c) => delete c.routes[0].rules[0].key, "routes[0].rules[0].key", /required/);
    rejects((c) => (c.routes[0].rules[0].key = "cookie"), "routes[0].rules[0].key", /one of ip, user, route, apiKey:<header>/);
    rejects((c) => (c.routes[0].rules[0].key = []), "routes[0].rules[0].key", /at least 1/);
    rejects((c) => (c.routes[0].rules[0].key = ["ip", "IP"]), "routes[0].rules[0].key[1]", /one of/);
    rejects((c) => (c.routes[0].rules[0].key = ["ip", "ip"]), "routes[0].rules[0].key[1]", /twice/);
    rejects((c) => (c.routes[0].rules[0].key = "apiKey:"), "routes[0].rules[0].key", /non-empty string/);
    rejects((c) => (c.routes[0].rules[0].key = "apiKey:x api key"), "routes[0].rules[0].key", /HTTP header name/);
    rejects((c) => (c.routes[0].rules[0].key = ["ip", 7]), "routes[0].rules[0].key[1]", /non-empty string/);
    rejects((c) => (c.routes[0].rules[0].store = "mongo"), "routes[0].rules[0].store", /"memory", "durable", "kv", "redis"/);
    rejects((c) => (c.routes[0].rules[0].mode = "dry-run"), "routes[0].rules[0].mode", /"enforce", "shadow", "bypass"/);
    rejects((c) => (c.routes[0].rules[0].rollout = 1.5), "routes[0].rules[0].rollout", /number from 0 to 1/);
    rejects((c) => (c.routes[0].rules[0].rollout = "50%"), "routes[0].rules[0].rollout", /number from 0 to 1/);
    rejects((c) => (c.routes[1].rules[1].rollout = 0.5), "routes[1].rules[1].rollout", /only to mode "enforce"/);
  });

  test("upstream URLs", () => {
    rejects((c) => (c.routes[0].upstream.url = "api.example.com/a"), "routes[0].upstream.url", /absolute URL/);
    rejects((c) => (c.routes[0].upstream.url = "ftp://api.example.com/a"), "routes[0].upstream.url", /https URL/);
    rejects((c) => (c.routes[0].upstream.url = "http://api.example.com/a"), "routes[0].upstream.url", /in clear/);
    rejects((c) => (c.routes[0].upstream.url = "https://user:pw@api.example.com/a"), "routes[0].upstream.url", /credentials/);
    rejects((c) => (c.routes[0].upstream.url = "https://api.example.com/a?key=1"), "routes[0].upstream.url", /query or a fragment/);
    rejects((c) => (c.routes[0].upstream.url = "https://api.example.com/a#x"), "routes[0].upstream.url", /query or a fragment/);
    rejects((c) => (c.routes[0].upstream.url = "https://api.example.com/x/../a"), "routes[0].upstream.url", /canonical form: "https:\/\/api.example.com\/a"/);
    rejects((c) => (c.routes[0].upstream.url = "https://API.example.com/a"), "routes[0].upstream.url", /canonical form/);
    rejects((c) => (c.routes[0].upstream.url = "https://api.example.com:443/a"), "routes[0].upstream.url", /canonical form/);
    rejects((c) => (c.routes[0].upstream.url = "https://api.example.com/a%2fb"), "routes[0].upstream.url", /encoded slash/);
    rejects((c) => (c.routes[0].upstream.url = "https://api.example.com//a"), "routes[0].upstream.url", /empty path segment/);
  });

  test("plain http only through a service binding or to this machine", () => {
    for (const url of ["http://localhost:8788/a", "http://127.0.0.1:9000"]) {
      const config = base();
      config.routes[0].upstream.url = url;
      validateConfig(config);
    }
    const viaService = base();
    viaService.routes[0].upstream = { url: "http://upstream.internal/a", service: "UPSTREAM" };
    assert.equal(validateConfig(viaService).routes[0].upstream.service, "UPSTREAM");
    rejects((c) => (c.routes[0].upstream.service = "my-service"), "routes[0].upstream.service", /binding name/);
  });

  test("credentials, timeouts, forwarded headers and cache policy", () => {
    rejects((c) => (c.routes[0].upstream.auth = { header: "x-api-key" }), "routes[0].upstream.auth.secret", /non-empty string/);
    rejects((c) => (c.routes[0].upstream.auth.secret = "1TOKEN"), "routes[0].upstream.auth.secret", /binding name/);
    rejects((c) => (c.routes[0].upstream.auth.header = "x api"), "routes[0].upstream.auth.header", /HTTP header name/);
    rejects((c) => (c.routes[0].upstream.auth.header = "Host"), "routes[0].upstream.auth.header", /cannot carry a credential/);
    rejects((c) => (c.routes[0].upstream.auth.scheme = "Bearer x"), "routes[0].upstream.auth.scheme", /authentication scheme/);
    rejects((c) => (c.routes[0].upstream.auth.token = "x"), "routes[0].upstream.auth.token", /unknown field/);
    rejects((c) => (c.routes[0].upstream.timeoutMs = 0), "routes[0].upstream.timeoutMs", /whole number from 1 to 300000/);
    rejects((c) => (c.routes[0].upstream.timeoutMs = 10.5), "routes[0].upstream.timeoutMs", /whole number/);
    rejects((c) => (c.routes[0].upstream.bodyTimeoutMs = 0), "routes[0].upstream.bodyTimeoutMs", /whole number from 1 to 3600000/);
    rejects((c) => (c.routes[0].upstream.bodyTimeoutMs = "60s"), "routes[0].upstream.bodyTimeoutMs", /whole number/);
    const unbounded = base();
    unbounded.routes[0].upstream.bodyTimeoutMs = null; // a stream that may idle for as long as it likes
    assert.equal(validateConfig(unbounded).routes[0].upstream.bodyTimeoutMs, null);
    rejects((c) => (c.routes[0].upstream.forwardHeaders = "authorization"), "routes[0].upstream.forwardHeaders", /array/);
    rejects((c) => (c.routes[1].upstream.forwardHeaders = ["Connection"]), "routes[1].upstream.forwardHeaders[0]", /hop-by-hop/);
    rejects((c) => (c.routes[1].upstream.forwardHeaders = ["cookie", "te"]), "routes[1].upstream.forwardHeaders[1]", /hop-by-hop/);
    rejects((c) => (c.routes[0].upstream.forwardHeaders = ["authorization"]), "routes[0].upstream.forwardHeaders[0]", /carries the upstream credential/);
    rejects((c) => (c.routes[1].upstream.forwardHeaders = ["accept"]), "routes[1].upstream.forwardHeaders[0]", /forwarded already/);
    rejects((c) => (c.routes[1].upstream.cacheControl = "max-age=60\r\nx-evil: 1"), "routes[1].upstream.cacheControl", /Cache-Control value/);
    rejects((c) => (c.routes[1].upstream.cacheControl = ""), "routes[1].upstream.cacheControl", /non-empty string/);
    const ok = base();
    ok.routes[1].upstream.forwardHeaders = ["Authorization", "cf-connecting-ip"];
    ok.routes[1].upstream.cacheControl = 'private,max-age=60, community="UCI"';
    const upstream = validateConfig(ok).routes[1].upstream;
    assert.deepEqual([...upstream.forwardHeaders], ["authorization", "cf-connecting-ip"]);
    assert.equal(upstream.cacheControl, 'private, max-age=60, community="UCI"');
  });

  test("stores and responses: the host's own options, validated by the host", () => {
    rejects((c) => (c.stores = []), "stores", /must be an object/);
    rejects((c) => (c.stores = { memory: {} }), "stores.memory", /unknown field \(expected one of durable, kv, redis\)/);
    rejects((c) => (c.stores = { durable: { store: "kv" } }), "stores.durable.store", /unknown field/);
    rejects((c) => (c.stores = { durable: { timeoutMs: 0 } }), "stores.durable.timeoutMs", /./);
    rejects((c) => (c.stores = { durable: { shards: 0 } }), "stores.durable.shards", /./);
    rejects((c) => (c.stores = { durable: { fallback: ["memory", "kv"] } }), "stores.durable.fallback", /asks KV before memory/);
    rejects((c) => (c.stores = { durable: { failMode: "sometimes" } }), "stores.durable.failMode", /"open" or "closed"/);
    rejects((c) => (c.stores = { kv: { shards: 2 } }), "stores.kv.shards", /applies to store 'durable', not 'kv'/);
    rejects((c) => (c.stores = { durable: { lease: { leaseMs: 0 } } }), "stores.durable.lease.leaseMs", /./);
    rejects((c) => (c.stores = { durable: { lease: "yes" } }), "stores.durable.lease", /./);
    rejects((c) => (c.stores = { kv: { lease: true } }), "stores.kv.lease", /./);
    rejects((c) => (c.stores = { kv: { bindings: { kv: "" } } }), "stores.kv.bindings.kv", /name of a binding/);
    rejects((c) => (c.responses = { headers: "all" }), "responses.headers", /one of legacy, draft, draft-6, draft-7, draft-8, both, none/);
    rejects((c) => (c.responses = { problemJson: "yes" }), "responses.problemJson", /true or false/);
    rejects((c) => (c.responses = { code: "" }), "responses.code", /non-empty string/);
    rejects((c) => (c.responses = { status: 503 }), "responses.status", /unknown field/);
    const defaults = validateConfig(base());
    assert.deepEqual({ ...defaults.responses }, { code: "sluice_rate_limited", headers: "both", problemJson: false });
    assert.deepEqual(JSON.parse(JSON.stringify(defaults.stores)), { durable: {}, kv: {}, redis: {} });
    const tuned = base();
    tuned.stores = { durable: { shards: "key", timeoutMs: 200, failMode: "closed", fallback: ["memory"] } };
    tuned.responses = { code: 42, problemJson: true, headers: "draft" };
    const config = validateConfig(tuned);
    assert.deepEqual({ ...config.stores.durable }, tuned.stores.durable);
    assert.deepEqual({ ...config.responses }, tuned.responses);
  });

  test("what sluice refuses when the limiters are built names the rule, at start-up", () => {
    isolateTestHooks.reset();
    const big = base();
    // About 30.5 MiB of fixed-window table each: two do not fit the isolate's 56 MiB.
    big.routes[0].rules[0].keyCapacity = 1_200_000;
    big.routes[1].rules[0] = { name: "b-big", algorithm: "fixed-window", limit: 5, windowSec: 1, keyCapacity: 1_200_000, key: "ip" };
    const config = validateConfig(big, "test.json");
    assert.throws(
      () => createGateway(config),
      (error) => {
        assert.ok(error instanceof ConfigError, String(error));
        assert.equal(error.path, "routes[1].rules[0].keyCapacity");
        assert.match(error.message, /^invalid gateway configuration \(test\.json\): routes\[1\]\.rules\[0\]\.keyCapacity: brings this Worker's key tables to \d+ MiB/);
        return true;
      },
    );
    isolateTestHooks.reset();
  });

  test("admin and analytics", () => {
    rejects((c) => (c.admin.path = "/"), "admin.path", /a path like/);
    rejects((c) => (c.admin.path = "/v1/a"), "admin.path", /prefix of routes\[0\]/);
    rejects((c) => delete c.admin.tokenSecret, "admin.tokenSecret", /non-empty string/);
    rejects((c) => (c.admin.token = "literal-token"), "admin.token", /unknown field/);
    rejects((c) => (c.analytics = { binding: "" }), "analytics.binding", /non-empty string/);
    rejects((c) => (c.analytics = { dataset: "x" }), "analytics.dataset", /unknown field/);
    const noAdmin = base();
    delete noAdmin.admin;
    assert.equal(validateConfig(noAdmin).admin, null);
  });

  test("admin.dashboard: defaults, and each field's error names it", () => {
    assert.equal(validateConfig(base()).admin.dashboard, null, "no dashboard unless configured");
    const on = base();
    on.admin.dashboard = true;
    assert.deepEqual({ ...validateConfig(on).admin.dashboard }, { path: "/_sluice/dashboard", binding: "SLUICE_DASHBOARD", reportIntervalMs: 5000, showKeys: false });
    rejects((c) => (c.admin.dashboard = { path: "/_sluice/metrics" }), "admin.dashboard.path", /differ from admin.path/);
    rejects((c) => (c.admin.dashboard = { path: "/_sluice" }), "admin.dashboard.path", /differ from admin.path and not contain it/);
    rejects((c) => (c.admin.dashboard = { path: "/v1" }), "admin.dashboard.path", /routes\[0\]/);
    rejects((c) => (c.admin.dashboard = { binding: "not a binding" }), "admin.dashboard.binding", /./);
    rejects((c) => (c.admin.dashboard = { reportIntervalMs: -1 }), "admin.dashboard.reportIntervalMs", /whole number from 0/);
    rejects((c) => (c.admin.dashboard = { showKeys: "yes" }), "admin.dashboard.showKeys", /true or false/);
    rejects((c) => (c.admin.dashboard = { token: "x" }), "admin.dashboard.token", /unknown field/);
  });
});

describe("SLUICE_CONFIG overrides the bundled configuration", () => {
  const override = base();
  override.routes = [override.routes[1]];

  test("unset or empty: the bundled file", () => {
    assert.equal(resolveConfig(base(), {}).routes.length, 3);
    assert.equal(resolveConfig(base(), { SLUICE_CONFIG: "" }).routes.length, 3);
    assert.equal(resolveConfig(base(), undefined).routes.length, 3);
  });

  test("a JSON string or a [vars] table replaces it as a whole", () => {
    assert.equal(resolveConfig(base(), { SLUICE_CONFIG: JSON.stringify(override) }).routes[0].prefix, "/v1/b");
    assert.equal(resolveConfig(base(), { SLUICE_CONFIG: override }).routes[0].prefix, "/v1/b");
  });

  test("errors name SLUICE_CONFIG as their source; the bundled file's name its own", () => {
    const broken = structuredClone(override);
    broken.routes[0].rules[1].limit = 0;
    assert.throws(() => resolveConfig(base(), { SLUICE_CONFIG: JSON.stringify(broken) }), {
      name: "ConfigError",
      message: /^invalid gateway configuration \(SLUICE_CONFIG\): routes\[0\]\.rules\[1\]\.limit: /,
    });
    assert.throws(() => resolveConfig(base(), { SLUICE_CONFIG: "{ routes: [" }), {
      name: "ConfigError",
      message: /\(SLUICE_CONFIG\): SLUICE_CONFIG: is not valid JSON/,
    });
    assert.throws(() => resolveConfig(base(), { SLUICE_CONFIG: 42 }), { message: /JSON string or a table/ });
    const bundled = base();
    bundled.routes[0].methods = [];
    assert.throws(() => resolveConfig(bundled, {}), { message: /\(gateway\.config\.json\): routes\[0\]\.methods: / });
  });
});

describe("in the Worker, configuration is checked at start-up", () => {
  test("a valid override is served", async () => {
    const override = structuredClone(FIXTURE_CONFIG);
    override.routes = [override.routes[0]];
    override.routes[0].prefix = "/override";
    const gateway = await startGateway({ bindings: { SLUICE_CONFIG: JSON.stringify(override) } });
    try {
      assert.equal((await gateway.fetch("/override/x")).status, 200);
      assert.equal((await gateway.fetch("/v1/geo/x")).status, 404);
    } finally {
      await gateway.dispose();
    }
  });

  test("an invalid override stops the Worker before it serves anything, naming the field", async () => {
    const broken = structuredClone(FIXTURE_CONFIG);
    broken.routes[2].rules[0].limit = 0;
    const gateway = await startGateway({ bindings: { SLUICE_CONFIG: JSON.stringify(broken) }, waitReady: false });
    try {
      await assert.rejects(gateway.ready, /failed to start/);
      assert.match(gateway.stderr(), /routes\[2\]\.rules\[0\]\.limit: must be a whole number from 1/);
      assert.equal(gateway.upstream.length, 0);
    } finally {
      await gateway.mf.dispose().catch(() => {});
    }
  });

  test("the shipped Worker too: an invalid SLUICE_CONFIG stops it, naming the field", async () => {
    const broken = structuredClone(SHIPPED);
    broken.routes[4].rules[0].windowSec = 0;
    let stderr = "";
    const mf = new Miniflare({
      ...(await workerOptions({ name: "demo", entry: "demo", bindings: { SLUICE_CONFIG: JSON.stringify(broken) } })),
      handleRuntimeStdio(out, err) {
        out.resume();
        err.on("data", (chunk) => (stderr += chunk));
      },
    });
    try {
      await assert.rejects(mf.ready, /failed to start/);
      assert.match(stderr, /invalid gateway configuration \(SLUICE_CONFIG\): routes\[4\]\.rules\[0\]\.windowSec: must be a positive number of seconds/);
    } finally {
      await mf.dispose().catch(() => {});
    }
  });

  test("so does an invalid bundled file", async () => {
    const broken = structuredClone(FIXTURE_CONFIG);
    broken.routes[0].upstream.url = "https://user:pw@api.upstream.test/v2";
    const gateway = await startGateway({ bundledConfig: broken, waitReady: false });
    try {
      await assert.rejects(gateway.ready, /failed to start/);
      assert.match(gateway.stderr(), /\(gateway\.config\.json\): routes\[0\]\.upstream\.url: must not carry credentials/);
    } finally {
      await gateway.mf.dispose().catch(() => {});
    }
  });
});
