// Counting on the response in gateway.config.json (a rule's `countWhen` and `costFrom`): checked at
// start-up naming its path; the running gateway counts only the upstream responses that match, refuses
// a spent key before anything is forwarded, charges what the upstream says a request cost (bounded),
// and never lets that header reach the client.
import assert from "node:assert/strict";
import { test } from "node:test";

import { parseExposition, sample } from "./helpers/prometheus.js";

const { ConfigError, validateConfig } = await import("../../worker/gateway/config.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");

const unique = (name) => `${name}-${Math.random().toString(36).slice(2, 10)}`;
const config = (rule) => ({
  routes: [{ prefix: "/login", methods: ["POST"], upstream: { url: "https://api.internal/login", service: "UP" }, rules: [{ name: "login", algorithm: "fixed-window", limit: 3, windowSec: 600, key: "ip", ...rule }] }],
});

function refusedAt(rule) {
  try {
    validateConfig(config(rule));
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.path;
  }
  return "(accepted)";
}

test("a rule's countWhen and costFrom are checked at start-up, naming their path", () => {
  const rule = validateConfig(config({ countWhen: { status: [401, "500-599"] } })).routes[0].rules[0];
  assert.deepEqual(rule.countWhen, { status: [401, "500-599"] });
  assert.deepEqual(validateConfig(config({ countWhen: { status: [401] } })).routes[0].responseRuleIndexes, [0]);
  assert.equal(refusedAt({ countWhen: { status: [401, 700] } }), "routes[0].rules[0].countWhen.status[1]");
  assert.equal(refusedAt({ countWhen: { status: [] } }), "routes[0].rules[0].countWhen.status");
  assert.equal(refusedAt({ countWhen: [401] }), "routes[0].rules[0].countWhen");
  assert.equal(refusedAt({ costFrom: { max: 10 } }), "routes[0].rules[0].costFrom.header");
  assert.equal(refusedAt({ costFrom: { header: "x-cost", max: 0 } }), "routes[0].rules[0].costFrom.max");
  assert.equal(refusedAt({ mode: "shadow", countWhen: { status: [401] } }), "routes[0].rules[0].countWhen");
});

test("the running gateway counts only failed logins, and refuses a spent client before forwarding anything", async () => {
  let forwarded = 0;
  const upstream = { fetch: async (input, init) => (forwarded++, new Response("", { status: new Request(input, init).headers.get("x-password") === "right" ? 200 : 401 })) };
  const gateway = createGateway(validateConfig(config({ name: unique("failed-logins"), countWhen: { status: [401] } })), { log() {} });
  const login = async (password, address = "203.0.113.5") =>
    (await gateway.fetch(new Request("https://gw.test/login", { method: "POST", headers: { "cf-connecting-ip": address, "x-password": password } }), { UP: upstream }, { waitUntil() {} })).status;
  const seen = [];
  for (const password of ["right", "right", "wrong", "right", "wrong", "wrong", "right"]) seen.push(await login(password));
  // Successes spend nothing; the third failure spends the key; then even the right password is refused.
  assert.deepEqual(seen, [200, 200, 401, 200, 401, 401, 429]);
  assert.equal(forwarded, 6, "the refused attempt never reached the upstream");
  assert.equal(await login("wrong", "203.0.113.6"), 401, "another client has its own count");
});

test("the running gateway charges what the upstream says a request cost, bounded, and strips the header", async () => {
  const upstream = { fetch: async (input, init) => new Response("rows", { headers: { "x-cost": new Request(input, init).headers.get("x-test-cost") ?? "" } }) };
  const raw = config({ name: unique("query-cost"), limit: 100, costFrom: { header: "x-cost", max: 50 } });
  const gateway = createGateway(validateConfig(raw), { log() {} });
  const query = (cost) => gateway.fetch(new Request("https://gw.test/login", { method: "POST", headers: { "cf-connecting-ip": "198.51.100.7", "x-test-cost": cost } }), { UP: upstream }, { waitUntil() {} });
  const sent = [];
  // 30, then 999 (over max: 50), then "1e9" (invalid: the default, 1), then 19: 100 spent.
  for (const cost of ["30", "999", "1e9", "19"]) {
    const response = await query(cost);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-cost"), null, "the cost header never reaches the client");
    sent.push(await response.text());
  }
  assert.deepEqual(sent, ["rows", "rows", "rows", "rows"]);
  assert.equal((await query("1")).status, 429, "the budget is spent: refused before the upstream");
});

test("the gateway's countWhen and costFrom rules are in /metrics, the log line, Analytics Engine and the rate-limit headers", async () => {
  const ADMIN = "a".repeat(32);
  const upstream = {
    fetch: async (input, init) => {
      const sent = new Request(input, init).headers;
      return new Response("ok", { status: Number(sent.get("x-status") ?? 200), headers: sent.has("x-test-cost") ? { "x-cost": sent.get("x-test-cost") } : {} });
    },
  };
  const failures = unique("failures");
  const costs = unique("costs");
  const raw = {
    admin: { path: "/_admin", tokenSecret: "ADMIN" },
    routes: [
      { prefix: "/login", methods: ["POST"], upstream: { url: "https://api.internal/login", service: "UP" }, rules: [{ name: failures, algorithm: "fixed-window", limit: 2, windowSec: 600, key: "ip", countWhen: { status: [401] } }] },
      { prefix: "/query", methods: ["POST"], upstream: { url: "https://api.internal/query", service: "UP" }, rules: [{ name: costs, algorithm: "fixed-window", limit: 20, windowSec: 600, key: "ip", costFrom: { header: "x-cost", max: 8, default: 3 } }] },
    ],
  };
  const lines = [];
  const points = [];
  const gateway = createGateway(validateConfig(raw), { log: (line) => lines.push(JSON.parse(line)) });
  const env = { UP: upstream, ADMIN, SLUICE_ANALYTICS: { writeDataPoint: (point) => points.push(point) } };
  const send = async (path, headers) => {
    const pending = [];
    const response = await gateway.fetch(new Request(`https://gw.test${path}`, { method: "POST", headers: { "cf-connecting-ip": "192.0.2.33", ...headers } }), env, { waitUntil: (p) => pending.push(p) });
    await Promise.all(pending);
    return response;
  };

  // countWhen: a success is not counted; a 401 is, and its response says so; the third attempt is refused.
  const ok = await send("/login", { "x-status": "200" });
  assert.equal(ok.headers.get("ratelimit-policy"), `"${failures}";q=2;w=600`);
  // Not counted: nothing was spent, the headers say what is left (both units), as the library's do.
  assert.match(ok.headers.get("ratelimit"), new RegExp(`^"${failures}";r=2;t=\\d+$`));
  const failed = await send("/login", { "x-status": "401" });
  assert.match(failed.headers.get("ratelimit"), new RegExp(`^"${failures}";r=1;t=\\d+$`), "the headers say what is left after the charge");
  await send("/login", { "x-status": "401" });
  const refused = await send("/login", { "x-status": "200" });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get("ratelimit-policy"), `"${failures}";q=2;w=600`);
  assert.match(refused.headers.get("ratelimit"), new RegExp(`^"${failures}";r=0;t=\\d+$`));
  assert.ok(Number(refused.headers.get("retry-after")) > 0);

  // The log line: the rule, its event and what it left; whether the response was charged.
  const logged = lines.filter((line) => line.route === "/login").map((line) => [line.decision, line.rules.map(({ name, event, remaining, charged }) => [name, event, remaining, charged])]);
  assert.deepEqual(logged, [
    ["admitted", [[failures, "admitted", 2, false]]], // not counted: both units left
    ["admitted", [[failures, "admitted", 1, true]]],
    ["admitted", [[failures, "admitted", 0, true]]],
    ["denied", [[failures, "denied", 0, null]]],
  ]);
  // Analytics Engine: one rule point per request, its event, and double6 = charged after the response.
  const rulePoints = points.filter((point) => point.blobs[0] === "rule" && point.blobs[2] === failures);
  assert.deepEqual(rulePoints.map((point) => [point.blobs[3], point.doubles[5]]), [["admitted", 0], ["admitted", 1], ["admitted", 1], ["denied", 0]]);

  // costFrom (20 per 10 minutes): 4 from the header, 20 clamped to 8, none (the default, 3), "x" (invalid:
  // the default), then 7 with 2 left (exhausted: charged the 2); then the key is spent.
  const charged = [];
  for (const cost of ["4", "20", undefined, "x", "7"]) {
    const response = await send("/query", cost === undefined ? {} : { "x-test-cost": cost });
    assert.equal(response.headers.get("x-cost"), null);
    charged.push([response.status, response.headers.get("ratelimit")?.replace(/;t=\d+$/, "")]);
  }
  assert.deepEqual(charged, [200, 200, 200, 200, 200].map((status, i) => [status, `"${costs}";r=${[16, 8, 5, 2, 0][i]}`]));
  assert.equal((await send("/query", { "x-test-cost": "1" })).status, 429);

  const scrape = await gateway.fetch(new Request("https://gw.test/_admin", { headers: { authorization: `Bearer ${ADMIN}` } }), env, { waitUntil() {} });
  const metrics = parseExposition(await scrape.text());
  const login = { route: "/login", rule: failures };
  assert.equal(sample(metrics, "sluice_rule_admitted_total", { ...login, mode: "enforce" }), 3);
  assert.equal(sample(metrics, "sluice_rule_denied_total", { ...login, mode: "enforce" }), 1);
  assert.equal(sample(metrics, "sluice_response_rule_charged_total", login), 2);
  assert.equal(sample(metrics, "sluice_response_rule_not_counted_total", login), 1);
  const query = { route: "/query", rule: costs };
  assert.equal(sample(metrics, "sluice_rule_admitted_total", { ...query, mode: "enforce" }), 5);
  assert.equal(sample(metrics, "sluice_rule_denied_total", { ...query, mode: "enforce" }), 1);
  assert.equal(sample(metrics, "sluice_response_rule_charged_total", query), 5);
  const costsRead = Object.fromEntries(["header", "clamped", "missing", "invalid", "exhausted"].map((source) => [source, sample(metrics, "sluice_cost_from_total", { ...query, source })]));
  assert.deepEqual(costsRead, { header: 2, clamped: 1, missing: 1, invalid: 1, exhausted: 1 });
});

test("countWhen's ranges are the gateway's skipSuccessfulRequests and skipFailedRequests", async () => {
  const upstream = { fetch: async (input, init) => new Response(null, { status: Number(new Request(input, init).headers.get("x-status")) }) };
  const route = (prefix, name, status) => ({ prefix, methods: ["POST"], upstream: { url: `https://api.internal${prefix}`, service: "UP" }, rules: [{ name, algorithm: "fixed-window", limit: 2, windowSec: 600, key: "ip", countWhen: { status } }] });
  const gateway = createGateway(validateConfig({ routes: [route("/failures", unique("skip-successful"), ["400-599"]), route("/successes", unique("skip-failed"), ["100-399"])] }), { log() {} });
  const send = async (path, status) =>
    (await gateway.fetch(new Request(`https://gw.test${path}`, { method: "POST", headers: { "cf-connecting-ip": "192.0.2.44", "x-status": String(status) } }), { UP: upstream }, { waitUntil() {} })).status;
  const seen = async (path, statuses) => {
    const out = [];
    for (const status of statuses) out.push(await send(path, status));
    return out;
  };
  // ["400-599"], skipSuccessfulRequests: 2xx and 3xx are free; the second 4xx/5xx spends the key.
  assert.deepEqual(await seen("/failures", [200, 204, 302, 404, 200, 503, 200]), [200, 204, 302, 404, 200, 503, 429]);
  // ["100-399"], skipFailedRequests: 4xx and 5xx are free; the second success spends the key.
  assert.deepEqual(await seen("/successes", [500, 401, 200, 429, 201, 200]), [500, 401, 200, 429, 201, 429]);
});

// A response the rule does not count spent nothing: its headers and its log line say what is left
// after it, as before it, not the check's peek (what a charge would have left).
test("the gateway's response that countWhen does not count says what is left: nothing was spent", async () => {
  const lines = [];
  const gateway = createGateway(validateConfig(config({ name: unique("left"), countWhen: { status: [401] } })), { log: (line) => lines.push(JSON.parse(line)) });
  const statuses = [200, 401, 200];
  const env = { UP: { fetch: () => new Response("x", { status: statuses.shift() }) } };
  const seen = [];
  for (let i = 0; i < 3; i++) {
    const request = new Request("https://gw.test/login", { method: "POST", headers: { "cf-connecting-ip": "192.0.2.80" } });
    const response = await gateway.fetch(request, env, { waitUntil() {} });
    seen.push([response.status, response.headers.get("x-ratelimit-remaining"), /;r=(\d+)/.exec(response.headers.get("ratelimit") ?? "")?.[1], lines.at(-1).rules[0].remaining]);
  }
  // limit 3: a success leaves 3, the failure 2, the success after it 2.
  assert.deepEqual(seen, [[200, "3", "3", 3], [401, "2", "2", 2], [200, "2", "2", 2]]);
});
