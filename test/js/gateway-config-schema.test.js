// gateway.config.json's JSON Schema (gateway.config.schema.json) and the start-up validator come from
// one table (worker/gateway/config-fields.js). These tests fail when they disagree: the committed
// schema is the table's; every field the validator accepts, object by object, is in the schema (and
// no other); the shipped configuration passes both; and a sample of invalid configurations is refused
// by both, at the same field. The schema is checked by test/js/helpers/json-schema.js.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { schemaErrors } from "./helpers/json-schema.js";

const { ConfigError, validateConfig } = await import("../../worker/gateway/config.js");
const { configSchema } = await import("../../worker/gateway/config-schema.js");

const root = new URL("../../", import.meta.url);
const schema = JSON.parse(readFileSync(new URL("gateway.config.schema.json", root), "utf8"));
const shipped = JSON.parse(readFileSync(new URL("gateway.config.json", root), "utf8"));

// A configuration that uses every object of the table once, valid for both.
function full() {
  return {
    $schema: "./gateway.config.schema.json",
    routes: [
      {
        prefix: "/api",
        methods: ["GET", "POST"],
        upstream: { url: "https://api.example.com/v1", auth: { secret: "UP_TOKEN", header: "x-token", scheme: "" }, timeoutMs: 5000, maskBody: "auto" },
        rules: [
          { name: "api", algorithm: "sliding-counter", limit: 100, windowSec: 60, key: ["ip", "route"], store: "durable", autoBlock: { after: 3, withinSec: 60, blockSec: 600 }, overrides: [{ key: "ip:192.0.2.1", limit: 1000 }] },
          { name: "api-lock", kind: "lockout", key: "body:username", maxFailures: 5, windowSec: 900, lockSec: 900 },
          { name: "api-live", algorithm: "token-bucket", limit: 10, windowSec: 60, burst: 5, key: "user", liveOverrides: { name: "partners", refreshMs: 5000 } },
          { name: "api-failures", algorithm: "sliding-log", limit: 5, windowSec: 600, key: "ip", countWhen: { status: [401, "500-599"] }, costFrom: { header: "x-cost", max: 50 } },
        ],
        websocket: { connections: { max: 3, key: "ip" }, messages: { perConnection: { limit: 20, windowSec: 10 } }, maxMessageBytes: 65536 },
      },
    ],
    stores: {
      durable: { bindings: { durable: "SLUICE_DO", kv: "SLUICE_KV" }, shards: 4, lease: { leaseMs: 1000, maxLeaseUnits: 50, locationHint: "weur" }, fallback: ["memory"], failMode: "open", timeoutMs: 50, breaker: { failures: 3, cooldownMs: 500 }, preFilter: true, logIntervalMs: 1000 },
      kv: { bindings: { kv: "RATE_KV" }, fallback: ["memory"] },
      redis: { bindings: { redisUrl: "REDIS_URL", redisToken: "REDIS_TOKEN" }, lease: { leaseMs: 2000 }, failMode: "closed" },
    },
    jwt: { secretBinding: "JWT_SECRET", jwksUrl: "https://id.example.com/.well-known/jwks.json", algorithms: ["HS256", "RS256"], audience: ["api"], issuer: "https://id.example.com/", clockToleranceSec: 30, requireExp: true, cookie: "session", jwksCacheMs: 60000 },
    lists: { deny: { ips: ["203.0.113.0/24", "2001:db8::/32"], countries: ["t1"], asns: [64496] }, allow: { ips: ["192.0.2.50"] } },
    responses: { code: "limited", problemJson: false, headers: "both" },
    admin: { path: "/_sluice/metrics", tokenSecret: "ADMIN_TOKEN", dashboard: { reportIntervalMs: 1000 } },
    analytics: { binding: "SLUICE_ANALYTICS" },
    ip: { ipv6Prefix: 56 },
    accuracy: { sample: 0.01 },
  };
}

// The validator's refusal of `config`: its path, or null when it accepts it.
function validatorPath(config) {
  try {
    validateConfig(config);
    return null;
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.path;
  }
}

test("the committed gateway.config.schema.json is the one the table generates (node scripts/build-config-schema.js)", () => {
  assert.deepEqual(schema, configSchema());
});

test("the shipped gateway.config.json and a configuration using every object pass the validator and the schema", () => {
  for (const config of [shipped, full()]) {
    assert.equal(validatorPath(config), null);
    assert.deepEqual(schemaErrors(schema, config), []);
  }
  assert.equal(shipped.$schema, "./gateway.config.schema.json", "the shipped file names its schema");
});

// Where each object of the configuration is, how to put an unknown field in it, and its schema.
const OBJECTS = [
  ["(top level)", (c) => c, "config"],
  ["routes[0]", (c) => c.routes[0], "route"],
  ["routes[0].upstream", (c) => c.routes[0].upstream, "upstream"],
  ["routes[0].upstream.auth", (c) => c.routes[0].upstream.auth, "auth"],
  ["routes[0].rules[0]", (c) => c.routes[0].rules[0], "rule"],
  ["routes[0].rules[0].autoBlock", (c) => c.routes[0].rules[0].autoBlock, "autoBlock"],
  ["routes[0].rules[0].overrides[0]", (c) => c.routes[0].rules[0].overrides[0], "override"],
  ["routes[0].rules[1]", (c) => c.routes[0].rules[1], "lockoutRule"],
  ["routes[0].rules[2].liveOverrides", (c) => c.routes[0].rules[2].liveOverrides, "liveOverrides"],
  ["routes[0].rules[3].countWhen", (c) => c.routes[0].rules[3].countWhen, "countWhen"],
  ["routes[0].rules[3].costFrom", (c) => c.routes[0].rules[3].costFrom, "costFrom"],
  ["routes[0].websocket", (c) => c.routes[0].websocket, "websocket"],
  ["routes[0].websocket.connections", (c) => c.routes[0].websocket.connections, "connections"],
  ["routes[0].websocket.messages", (c) => c.routes[0].websocket.messages, "messages"],
  ["stores", (c) => c.stores, "stores"],
  ["stores.durable", (c) => c.stores.durable, "durableSettings"],
  ["stores.durable.bindings", (c) => c.stores.durable.bindings, "durableBindings"],
  ["stores.durable.lease", (c) => c.stores.durable.lease, "durableLease"],
  ["stores.durable.breaker", (c) => c.stores.durable.breaker, "breaker"],
  ["jwt", (c) => c.jwt, "jwt"],
  ["lists", (c) => c.lists, "lists"],
  ["lists.deny", (c) => c.lists.deny, "listEntries"],
  ["responses", (c) => c.responses, "responses"],
  ["admin", (c) => c.admin, "admin"],
  ["admin.dashboard", (c) => c.admin.dashboard, "dashboard"],
  ["analytics", (c) => c.analytics, "analytics"],
  ["ip", (c) => c.ip, "ip"],
  ["accuracy", (c) => c.accuracy, "accuracy"],
];

// The fields the validator names when it refuses an unknown one.
function acceptedFields(place) {
  const config = full();
  place(config).notAField = 1;
  try {
    validateConfig(config);
  } catch (error) {
    // "(expected one of a, b)", "(known: a, b)" or, the breaker's, "(a, b)".
    const list = /\((?:expected one of|known:) ([^)]*)\)/.exec(error.message) ?? /is not a \w+ setting \(([^)]*)\)/.exec(error.message);
    assert.ok(list !== null, `the refusal lists no fields: ${error.message}`);
    return list[1].split(", ").sort();
  }
  assert.fail("an unknown field was accepted");
}

test("every object: the fields the validator accepts are exactly the schema's properties", () => {
  for (const [where, place, definition] of OBJECTS) {
    const properties = Object.keys((definition === "config" ? schema : schema.$defs[definition]).properties).sort();
    assert.deepEqual(acceptedFields(place), properties, where);
    // And the schema refuses the unknown field at the same place.
    const config = full();
    place(config).notAField = 1;
    const at = where === "(top level)" ? "notAField" : `${where}.notAField`;
    assert.ok(schemaErrors(schema, config).some((e) => e.path === at), `${where}: the schema accepts an unknown field`);
  }
});

// Invalid configurations, each refused by the validator at `path`; the schema must refuse it there too.
const INVALID = [
  ["routes[0].methods[1]", (c) => (c.routes[0].methods[1] = "TRACE")],
  ["routes[0].methods", (c) => (c.routes[0].methods = [])],
  ["routes[0].rules", (c) => (c.routes[0].rules = [])],
  ["routes[0].rules", (c) => delete c.routes[0].rules],
  ["routes[0].upstream", (c) => delete c.routes[0].upstream],
  ["routes[0].upstream.timeoutMs", (c) => (c.routes[0].upstream.timeoutMs = 0)],
  ["routes[0].upstream.timeoutMs", (c) => (c.routes[0].upstream.timeoutMs = 300_001)],
  ["routes[0].upstream.bodyTimeoutMs", (c) => (c.routes[0].upstream.bodyTimeoutMs = 1.5)],
  ["routes[0].upstream.maxBodyBytes", (c) => (c.routes[0].upstream.maxBodyBytes = -1)],
  ["routes[0].upstream.maskBody", (c) => (c.routes[0].upstream.maskBody = "sometimes")],
  ["routes[0].upstream.auth.secret", (c) => (c.routes[0].upstream.auth.secret = "1BAD")],
  ["routes[0].upstream.auth.header", (c) => (c.routes[0].upstream.auth.header = "x token")],
  ["routes[0].rules[0].name", (c) => (c.routes[0].rules[0].name = "has space")],
  ["routes[0].rules[0].algorithm", (c) => (c.routes[0].rules[0].algorithm = "leaky")],
  ["routes[0].rules[0].algorithm", (c) => delete c.routes[0].rules[0].algorithm],
  ["routes[0].rules[0].limit", (c) => (c.routes[0].rules[0].limit = 0)],
  ["routes[0].rules[0].limit", (c) => (c.routes[0].rules[0].limit = "100")],
  ["routes[0].rules[0].key", (c) => delete c.routes[0].rules[0].key],
  ["routes[0].rules[0].key", (c) => (c.routes[0].rules[0].key = ["ip", "route", "user", "cf:asn", "cf:country"])],
  ["routes[0].rules[0].store", (c) => (c.routes[0].rules[0].store = "disk")],
  ["routes[0].rules[0].mode", (c) => (c.routes[0].rules[0].mode = "off")],
  ["routes[0].rules[0].autoBlock.after", (c) => (c.routes[0].rules[0].autoBlock.after = 0)],
  ["routes[0].rules[0].overrides[0].limit", (c) => (c.routes[0].rules[0].overrides[0].limit = 0)],
  ["routes[0].rules[1].store", (c) => (c.routes[0].rules[1].store = "kv")],
  ["routes[0].rules[1].maxBodyBytes", (c) => (c.routes[0].rules[1].maxBodyBytes = 10)],
  ["routes[0].rules[2].liveOverrides.refreshMs", (c) => (c.routes[0].rules[2].liveOverrides.refreshMs = 50)],
  ["routes[0].rules[2].liveOverrides.name", (c) => (c.routes[0].rules[2].liveOverrides.name = "a/b")],
  ["routes[0].rules[3].countWhen.status[1]", (c) => (c.routes[0].rules[3].countWhen.status[1] = 700)],
  ["routes[0].rules[3].costFrom.header", (c) => delete c.routes[0].rules[3].costFrom.header],
  ["routes[0].rules[3].costFrom.max", (c) => (c.routes[0].rules[3].costFrom.max = 0)],
  ["routes[0].websocket.connections.max", (c) => (c.routes[0].websocket.connections.max = 0)],
  ["routes[0].websocket.connections.status", (c) => (c.routes[0].websocket.connections.status = 200)],
  ["routes[0].websocket.maxMessageBytes", (c) => (c.routes[0].websocket.maxMessageBytes = 2 ** 26)],
  ["responses.headers", (c) => (c.responses.headers = "all")],
  ["admin.tokenSecret", (c) => delete c.admin.tokenSecret],
  ["admin.dashboard.reportIntervalMs", (c) => (c.admin.dashboard.reportIntervalMs = -5)],
  ["analytics.binding", (c) => (c.analytics.binding = "has-dash")],
  // jwt: what the library's verifier refuses, one field at a time.
  ["jwt.secretBinding", (c) => (c.jwt.secretBinding = "has-dash")],
  ["jwt.jwksUrl", (c) => (c.jwt.jwksUrl = "http://id.example.com/keys")],
  ["jwt.algorithms", (c) => (c.jwt.algorithms[1] = "none")],
  ["jwt.algorithms", (c) => (c.jwt.algorithms = [])],
  ["jwt.audience", (c) => (c.jwt.audience = [])],
  ["jwt.audience", (c) => (c.jwt.audience = "")],
  ["jwt.issuer", (c) => (c.jwt.issuer = 7)],
  ["jwt.clockToleranceSec", (c) => (c.jwt.clockToleranceSec = 301)],
  ["jwt.requireExp", (c) => (c.jwt.requireExp = "yes")],
  ["jwt.cookie", (c) => (c.jwt.cookie = "a cookie")],
  ["jwt.jwksCacheMs", (c) => (c.jwt.jwksCacheMs = 999)],
  ["jwt.keys", (c) => (c.jwt.keys = {})],
  ["jwt.notAField", (c) => (c.jwt.notAField = 1)],
  // lists
  ["lists.deny.countries[0]", (c) => (c.lists.deny.countries[0] = "NZL")],
  ["lists.deny.asns[0]", (c) => (c.lists.deny.asns[0] = -1)],
  ["lists.deny.asns[0]", (c) => (c.lists.deny.asns[0] = 2 ** 32)],
  ["lists.deny.ips", (c) => (c.lists.deny.ips = "203.0.113.0/24")],
  ["lists.deny.ips", (c) => (c.lists.deny.ips = Array.from({ length: 5001 }, (_, i) => `10.0.${i >> 8}.${i & 255}`))],
  ["lists.allow.notAField", (c) => (c.lists.allow.notAField = [])],
  ["lists.block", (c) => (c.lists.block = {})],
  // store settings, per store kind
  ["stores.durable.shards", (c) => (c.stores.durable.shards = 0)],
  ["stores.durable.shards", (c) => (c.stores.durable.shards = 4097)],
  ["stores.durable.shards", (c) => (c.stores.durable.shards = "all")],
  ["stores.kv.shards", (c) => (c.stores.kv.shards = 2)],
  ["stores.kv.lease", (c) => (c.stores.kv.lease = true)],
  ["stores.durable.lease.leaseMs", (c) => (c.stores.durable.lease.leaseMs = 0)],
  ["stores.durable.lease.maxLeaseUnits", (c) => (c.stores.durable.lease.maxLeaseUnits = 2 ** 20 + 1)],
  ["stores.durable.lease.locationHint", (c) => (c.stores.durable.lease.locationHint = "mars")],
  ["stores.redis.lease.locationHint", (c) => (c.stores.redis.lease.locationHint = "weur")],
  ["stores.durable.fallback[0]", (c) => (c.stores.durable.fallback = ["disk"])],
  ["stores.kv.fallback[0]", (c) => (c.stores.kv.fallback = ["kv"])],
  ["stores.durable.failMode", (c) => (c.stores.durable.failMode = "half")],
  ["stores.durable.timeoutMs", (c) => (c.stores.durable.timeoutMs = 0)],
  ["stores.durable.breaker.failures", (c) => (c.stores.durable.breaker.failures = 0)],
  ["stores.durable.breaker.cooldownMs", (c) => (c.stores.durable.breaker.cooldownMs = 0)],
  ["stores.durable.preFilter", (c) => (c.stores.durable.preFilter = "yes")],
  ["stores.durable.logIntervalMs", (c) => (c.stores.durable.logIntervalMs = -1)],
  ["stores.durable.bindings.durable", (c) => (c.stores.durable.bindings.durable = "has-dash")],
  ["stores.kv.bindings.durable", (c) => (c.stores.kv.bindings.durable = "SLUICE_DO")],
  ["stores.redis.bindings.redisUrl", (c) => (c.stores.redis.bindings.redisUrl = "")],
  ["routes[0].rules[0].lease.leaseMs", (c) => (c.routes[0].rules[0].lease = { leaseMs: 3_600_001 })],
];

test("a sample of invalid configurations is refused by the validator and the schema, at the same field", () => {
  for (const [path, spoil] of INVALID) {
    const config = full();
    spoil(config);
    assert.equal(validatorPath(config), path, `validator, ${path}`);
    const errors = schemaErrors(schema, config);
    // At that field, or inside it (the library names a list, the schema its item: jwt.algorithms[1]).
    assert.ok(errors.some((e) => e.path === path || e.path.startsWith(`${path}.`) || e.path.startsWith(`${path}[`)), `schema, ${path}: ${JSON.stringify(errors)}`);
  }
});
