// A gateway rule whose store binding env lacks (gateway/store-bindings.js). The attack: a deployment
// that forgot [[durable_objects.bindings]] or [[kv_namespaces]] would, if the gateway fell back to
// each isolate's memory, admit `limit` per isolate — N x limit across N isolates — while every
// dashboard said "durable". Instead the route refuses (500 sluice_misconfigured, generic body), the
// upstream is never called, and the refusal is counted and logged naming the rule's field and the
// binding. A binding that is present but fails (an outage) still falls back, as configured.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { parseExposition, sample } from "./helpers/prometheus.js";
import { startGatewayIsolates } from "./fixtures/gateway/isolates.js";

const ISOLATES = 3;
const LIMIT = 2;
const ADMIN_TOKEN = "admin-token-for-store-bindings-0123456789";
const UPSTREAM = { url: "http://svc.internal/base", service: "SVC" };
const rule = (name, extra = {}) => ({ name, algorithm: "fixed-window", limit: LIMIT, windowSec: 60, key: "ip", ...extra });

const CONFIG = {
  routes: [
    { prefix: "/exact", methods: ["GET"], upstream: UPSTREAM, rules: [rule("exact-ip", { store: "durable" })] },
    { prefix: "/approx", methods: ["GET"], upstream: UPSTREAM, rules: [rule("local-ip", { limit: 100 }), rule("approx-ip", { store: "kv" })] },
    { prefix: "/observe", methods: ["GET"], upstream: UPSTREAM, rules: [rule("observe-ip", { store: "durable", mode: "shadow" })] },
    {
      prefix: "/login",
      methods: ["POST"],
      upstream: UPSTREAM,
      rules: [rule("login-ip", { limit: 100 }), { name: "login-lockout", kind: "lockout", key: "body:username", maxFailures: 3 }],
    },
    {
      prefix: "/ws",
      methods: ["GET"],
      upstream: UPSTREAM,
      rules: [rule("ws-ip", { limit: 100 })],
      websocket: { connections: { max: 1, key: "ip", store: "durable" } },
    },
    { prefix: "/local", methods: ["GET"], upstream: UPSTREAM, rules: [rule("plain-ip")] },
  ],
  stores: { durable: { fallback: ["memory"] }, kv: { bindings: { kv: "RATE_KV" } } },
  admin: { path: "/_sluice/metrics", tokenSecret: "ADMIN_TOKEN" },
};

/**
 * Starts ISOLATES copies of the gateway fixture Worker on CONFIG, each an isolate of its own, their
 * upstream a service binding that counts what reaches it. `durableObjects` binds SLUICE_DO (or not).
 */
async function startIsolates(durableObjects) {
  const upstream = [];
  let stdout = "";
  const { mf, isolates } = await startGatewayIsolates({
    count: ISOLATES,
    config: CONFIG,
    adminToken: ADMIN_TOKEN,
    upstream: async (request) => {
      upstream.push(new URL(request.url).pathname);
      return new Response("upstream ok");
    },
    durableObjects: () => durableObjects,
    onStdout: (chunk) => (stdout += chunk),
  });
  const logLines = async (count) => {
    for (let attempt = 0; attempt < 200; attempt++) {
      const lines = stdout.split("\n").slice(0, -1).filter((line) => line.startsWith("{")).map((line) => JSON.parse(line));
      if (lines.length >= count) return lines;
      await new Promise((done) => setTimeout(done, 10));
    }
    assert.fail(`fewer than ${count} log lines arrived`);
  };
  const metrics = async (on) => {
    const response = await on.fetch("http://gateway.test/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(response.status, 200);
    return parseExposition(await response.text());
  };
  return { mf, isolates, upstream, logLines, metrics };
}

const get = (on, path, ip) => on.fetch(`http://gateway.test${path}`, { headers: { "cf-connecting-ip": ip } });

describe("a store binding env lacks", () => {
  let gateway;
  before(async () => {
    gateway = await startIsolates(undefined); // neither SLUICE_DO nor RATE_KV is bound
  });
  after(() => gateway?.mf.dispose());

  test("is never limited from memory: every isolate refuses the durable rule's route, nothing reaches the upstream", async () => {
    const responses = [];
    // Twice the limit on each isolate: memory would have admitted LIMIT per isolate, 6 in all.
    for (const on of gateway.isolates) {
      for (let i = 0; i < 2 * LIMIT; i++) {
        const response = await get(on, "/exact/x", "198.51.100.1");
        responses.push({ status: response.status, cache: response.headers.get("cache-control"), body: await response.text() });
      }
    }
    assert.deepEqual(gateway.upstream, [], "not one request was admitted");
    const refusal = { status: 500, cache: "no-store", body: JSON.stringify({ error: "gateway misconfigured", code: "sluice_misconfigured" }) };
    assert.deepEqual(responses, Array(ISOLATES * 2 * LIMIT).fill(refusal), "a generic body: the detail is in the log");
  });

  test("the kv rule, the shadow rule, the lockout rule and the connection limit are refused alike; a route on memory only still serves", async () => {
    const on = gateway.isolates[1];
    for (const [method, path] of [["GET", "/approx/x"], ["GET", "/observe/x"], ["POST", "/login"], ["GET", "/ws/x"]]) {
      const response = await on.fetch(`http://gateway.test${path}`, {
        method,
        headers: { "cf-connecting-ip": "198.51.100.2", "content-type": "application/json" },
        ...(method === "POST" ? { body: JSON.stringify({ username: "alice" }) } : {}),
      });
      assert.equal(response.status, 500, path);
      assert.equal((await response.json()).code, "sluice_misconfigured", path);
    }
    assert.deepEqual(gateway.upstream, []);
    const local = await get(on, "/local/x", "198.51.100.2");
    assert.equal(local.status, 200);
    assert.equal(await local.text(), "upstream ok");
    assert.deepEqual(gateway.upstream, ["/base/x"]);
  });

  test("each refusal is logged naming the rule's field and the binding, and counted", async () => {
    const lines = await gateway.logLines(ISOLATES * 2 * LIMIT + 5);
    const exact = lines.filter((line) => line.route === "/exact");
    assert.equal(exact.length, ISOLATES * 2 * LIMIT);
    for (const line of exact) {
      assert.equal(line.status, 500);
      assert.equal(
        line.error,
        'routes[0].rules[0].store: "durable" needs the binding SLUICE_DO (stores.durable.bindings.durable), which env does not have: ' +
          "declare it in wrangler.toml ([[durable_objects.bindings]]) or choose another store",
      );
    }
    const errorOf = (route) => lines.find((line) => line.route === route).error;
    assert.match(errorOf("/approx"), /^routes\[1\]\.rules\[1\]\.store: "kv" needs the binding RATE_KV \(stores\.kv\.bindings\.kv\)/);
    assert.match(errorOf("/observe"), /^routes\[2\]\.rules\[0\]\.store: "durable" needs the binding SLUICE_DO/);
    assert.match(errorOf("/login"), /^routes\[3\]\.rules\[1\]\.store: "durable" needs the binding SLUICE_DO/);
    assert.match(errorOf("/ws"), /^routes\[4\]\.websocket\.connections\.store: "durable" needs the binding SLUICE_DO/);
    const counted = [];
    for (const on of gateway.isolates) counted.push(sample(await gateway.metrics(on), "sluice_refused_total", { code: "sluice_misconfigured" }));
    assert.deepEqual(counted, [2 * LIMIT, 2 * LIMIT + 4, 2 * LIMIT]);
  });
});

describe("a store binding that is present but fails (an outage)", () => {
  let gateway;
  before(async () => {
    // SLUICE_DO is a real namespace whose objects fail every call; stores.durable falls back to memory.
    gateway = await startIsolates({ SLUICE_DO: { className: "FailingDurableObject", scriptName: "gw0", useSQLite: true } });
  });
  after(() => gateway?.mf.dispose());

  test("still falls back as configured, and every fallback is counted", async () => {
    const on = gateway.isolates[0];
    const statuses = [];
    for (let i = 0; i < LIMIT + 1; i++) statuses.push((await get(on, "/exact/x", "198.51.100.3")).status);
    assert.deepEqual(statuses, [200, 200, 429], "the isolate's memory decided, at the rule's limit");
    const families = await gateway.metrics(on);
    assert.equal(sample(families, "sluice_rule_fallbacks_total", { route: "/exact", rule: "exact-ip" }), LIMIT + 1);
    assert.equal(sample(families, "sluice_store_failures_total", { chain: "durable:SLUICE_DO", store: "durable", kind: "error" }), LIMIT + 1);
    assert.equal(sample(families, "sluice_refused_total", { code: "sluice_misconfigured" }), 0);
  });
});
