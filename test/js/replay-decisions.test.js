// sluice replay decides as the Worker does (issue 21 §1): the same requests at the same times get the
// same decisions, rule by rule.
//  - --config: the gateway fixture Worker (the real gateway on the real limiter) runs in miniflare
//    with its limiter's clock set to each request's logged time; the replay engine decides the same
//    generated log; every request's status (404 / 405 / 400 / 429 / 200) and every rule's event in the
//    gateway's log line (admitted, denied, would_have_denied, unchecked) must match. The config has
//    every algorithm, a shadow rule, a partial rollout, a composed key, a rule shared by two routes,
//    and nested prefixes; the log has re-spelt, dot-segment and refused paths.
//  - --rule: createLimiter with a `clock`, given real Requests, against the replay's rule engine on
//    the same log: every algorithm, several rules all-or-nothing, countDenied and costs.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createGatewayEngine } from "../../worker/cli/replay/gateway-engine.js";
import { createRuleEngine } from "../../worker/cli/replay/rule-engine.js";
import { parseRule } from "../../worker/cli/replay/rules.js";
import { isolateTestHooks } from "../../worker/src/engine/isolate.js";
import { apiKey, bearerToken, compose, firstOf, ip, route, user } from "../../worker/src/http/keys.js";
import { createLimiter } from "../../worker/src/engine/limiter.js";
import { startGateway } from "./fixtures/gateway/harness.js";
import { traffic } from "./fixtures/replay/traffic.js";

const upstream = (path) => ({ url: `https://api.upstream.test${path}` });
const CONFIG = {
  routes: [
    {
      prefix: "/api",
      methods: ["GET", "POST"],
      upstream: upstream("/api"),
      rules: [
        { name: "api", algorithm: "sliding-counter", limit: 12, windowSec: 10, key: "user" },
        { name: "api-ip-shadow", algorithm: "fixed-window", limit: 3, windowSec: 5, key: "ip", mode: "shadow" },
        { name: "api-bucket", algorithm: "token-bucket", limit: 10, windowSec: 10, burst: 4, key: "ip", rollout: 0.5 },
      ],
    },
    {
      prefix: "/api/checkout",
      methods: ["POST"],
      upstream: upstream("/checkout"),
      rules: [
        { name: "checkout", algorithm: "gcra", limit: 1, windowSec: 10, key: ["user", "route"] },
        { name: "api", algorithm: "sliding-counter", limit: 12, windowSec: 10, key: "user" },
      ],
    },
    {
      prefix: "/auth/login",
      methods: ["POST"],
      upstream: upstream("/login"),
      rules: [
        { name: "login", algorithm: "sliding-log", limit: 4, windowSec: 10, key: "ip" },
        { name: "login-leaky", algorithm: "leaky-bucket", limit: 6, windowSec: 10, burst: 3, key: "apiKey:x-api-key" },
      ],
    },
    { prefix: "/data", methods: ["GET"], upstream: upstream("/data"), rules: [{ name: "data", algorithm: "fixed-window", limit: 2, windowSec: 10, key: ["ip", "route"] }] },
  ],
};

// A busy minute: 12 clients, three of them bursting, plus paths the gateway re-spells or refuses.
function log() {
  const requests = traffic({ seed: 21, count: 360, clients: 12, durationMs: 60_000, abusers: 3 });
  const odd = ["/api/%63heckout/9", "/API/Items/3", "/api/../data/export/1", "/api//items", "/api/items;jsessionid=1", "/data/export/%2e%2e/x", "/static/app.js"];
  odd.forEach((uri, i) => {
    const at = 40 + i * 45;
    requests.splice(at, 0, { ...requests[at], uri, method: uri.includes("checkout") ? "POST" : "GET" });
  });
  // One method no route takes.
  requests.splice(100, 0, { ...requests[100], uri: "/data/export/2", method: "DELETE" });
  return requests.map((r) => ({ ...r, timeMs: r.timeMs + 0 }));
}

/** @param {any} r */
function recordOf(r) {
  const headers = {};
  if (r.authorization !== null) headers.authorization = r.authorization;
  if (r.apiKey !== null) headers["x-api-key"] = r.apiKey;
  return { timeMs: r.timeMs, ip: r.ip, method: r.method, uri: r.uri, host: r.host, status: r.status, headers: Object.keys(headers).length > 0 ? headers : null };
}

const STATUS_OF = { bad_path: 400, no_route: 404, method: 405 };

describe("--config: the replay decides as the gateway Worker in miniflare", () => {
  let gateway;
  before(async () => {
    gateway = await startGateway({ bundledConfig: CONFIG, failingStores: false });
  });
  after(() => gateway?.dispose());

  test("every request's status and every rule's event match, request by request", async () => {
    const requests = log();
    isolateTestHooks.reset();
    const engine = createGatewayEngine(CONFIG, "test");
    const replayed = [];
    for (const r of requests) {
      const events = [];
      const result = await engine.decide(recordOf(r), (rule, key, event) => events.push(`${engine.rules[rule].name}:${event}`));
      replayed.push({ status: result.outcome === "checked" ? (result.blocked ? 429 : 200) : STATUS_OF[result.outcome], events });
    }

    await gateway.reset();
    const observed = [];
    for (const r of requests) {
      await gateway.at(r.timeMs);
      const headers = { "cf-connecting-ip": r.ip };
      if (r.authorization !== null) headers.authorization = r.authorization;
      if (r.apiKey !== null) headers["x-api-key"] = r.apiKey;
      const response = await gateway.raw(r.uri, { method: r.method, headers: Object.entries(headers).map(([k, v]) => `${k}: ${v}`), body: r.method === "POST" ? "{}" : "" });
      observed.push({ status: response.status });
    }
    const lines = await gateway.waitForLogs(requests.length);
    assert.equal(lines.length, requests.length);
    lines.forEach((line, i) => {
      observed[i].events = line.rules.filter((rule) => rule.event !== "bypassed").map((rule) => `${rule.name}:${rule.event}`);
    });

    for (let i = 0; i < requests.length; i++) {
      assert.deepEqual(replayed[i], observed[i], `request ${i}: ${requests[i].method} ${requests[i].uri} from ${requests[i].ip} at ${requests[i].timeMs}`);
    }
    // The log exercised what it is meant to: denials, shadow denials, unchecked rules and each refusal.
    const all = replayed.flatMap((r) => r.events);
    for (const event of ["api:denied", "api-ip-shadow:would_have_denied", "login:denied", "data:denied", "checkout:denied"]) {
      assert.ok(all.includes(event), `the log has no ${event}`);
    }
    for (const status of [400, 404, 405, 429]) assert.ok(replayed.some((r) => r.status === status), `no ${status}`);
  });
});

describe("--rule: the replay decides as createLimiter with the same rules and clock", () => {
  const RULES = [
    "ip 30/10s sliding-counter count-denied",
    "user 20/30s token-bucket burst=8 cost=2",
    "apiKey:x-api-key 16/5s fixed-window",
    "ip+path 1/10s sliding-counter prefix=/api",
    "path 3/10s fixed-window",
    "ip 2/10s sliding-log prefix=/auth/login methods=POST",
    "user 1/10s gcra prefix=/api/checkout",
    "ip 9/10s leaky-bucket burst=3 cost=3 prefix=/api",
  ].map((text, i) => parseRule(text, i));

  // The limiter the rules describe, built as a user of the library would: key helpers, a clock.
  function libraryLimiter(indexes, clock) {
    const keyOf = (part) => (part === "ip" ? ip() : part === "user" ? firstOf(user(bearerToken), ip()) : part === "path" ? route() : apiKey(part.slice(7)));
    return createLimiter({
      clock,
      rules: indexes.map((i) => {
        const rule = RULES[i];
        const parts = rule.key.map(keyOf);
        return { name: rule.name, algorithm: rule.algorithm, limit: rule.limit, windowMs: rule.windowMs, ...(rule.burst > 0 ? { burst: rule.burst } : {}), ...(rule.countDenied ? { countDenied: true } : {}), cost: rule.cost, keyCapacity: rule.keyCapacity, key: parts.length === 1 ? parts[0] : compose(...parts) };
      }),
    });
  }

  test("every rule's decision and key match, request by request, all-or-nothing across the rules a request matches", async () => {
    const requests = traffic({ seed: 5, count: 1500, clients: 15, durationMs: 90_000, abusers: 3 })
      // Few ids, so that path keys repeat.
      .map((r) => ({ ...r, uri: r.uri.replace(/\/(\d+)/, (_, id) => `/${id % 4}`) }));
    isolateTestHooks.reset();
    const engine = createRuleEngine(RULES);
    const replayed = [];
    for (const r of requests) {
      const checks = [];
      const result = await engine.decide(recordOf(r), (rule, key, event) => checks.push({ rule, key, allowed: event === "admitted" }));
      replayed.push({ blocked: result.blocked, checks });
    }

    isolateTestHooks.reset();
    let now = 0;
    const limiters = new Map();
    const observed = [];
    for (const r of requests) {
      const path = r.uri.split("?")[0];
      const matching = RULES.flatMap((rule, i) => ((path === rule.prefix || path.startsWith(`${rule.prefix}/`) || rule.prefix === "/") && (rule.methods === null || rule.methods.includes(r.method)) ? [i] : []));
      const id = matching.join(",");
      if (!limiters.has(id)) limiters.set(id, libraryLimiter(matching, () => now));
      now = r.timeMs;
      const headers = { "cf-connecting-ip": r.ip };
      if (r.authorization !== null) headers.authorization = r.authorization;
      if (r.apiKey !== null) headers["x-api-key"] = r.apiKey;
      const decision = await limiters.get(id).limit(new Request(`https://${r.host}${r.uri}`, { method: r.method, headers }));
      observed.push({ blocked: !decision.allowed, checks: matching.map((rule, j) => ({ rule, key: decision.keys[j], allowed: decision.checks[j].allowed })) });
    }
    for (let i = 0; i < requests.length; i++) assert.deepEqual(replayed[i], observed[i], `request ${i}: ${requests[i].method} ${requests[i].uri}`);
    const denials = RULES.map((_, rule) => replayed.filter((r) => r.checks.some((c) => c.rule === rule && !c.allowed)).length);
    for (const [rule, count] of denials.entries()) assert.ok(count > 0, `rule ${rule + 1} never denied: the log does not exercise it`);
  });
});
