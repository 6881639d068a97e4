// Counting on the response in gateway.config.json (a rule's `countWhen` and `costFrom`): checked at
// start-up naming its path; the running gateway counts only the upstream responses that match, refuses
// a spent key before anything is forwarded, charges what the upstream says a request cost (bounded),
// and never lets that header reach the client.
import assert from "node:assert/strict";
import { test } from "node:test";

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
