// The gateway's rules that count on the response (countWhen, costFrom) on the Durable Object store,
// across three isolates at once: the check before the upstream call only peeks, so a burst may forward
// more requests than the limit, but the charges after the responses are the object's, so never more
// is charged than the limit allows, and once it is spent every isolate refuses before forwarding.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { parseExposition, sample } from "./helpers/prometheus.js";
import { startGatewayIsolates } from "./fixtures/gateway/isolates.js";

const ISOLATES = 3;
const ADMIN_TOKEN = "admin-token-for-response-count-0123456789";
const rule = (name, extra) => ({ name, algorithm: "fixed-window", windowSec: 600, key: "ip", store: "durable", ...extra });
const CONFIG = {
  routes: [
    { prefix: "/login", methods: ["POST"], upstream: { url: "http://svc.internal/login", service: "SVC" }, rules: [rule("failed-logins", { limit: 5, countWhen: { status: [401] } })] },
    { prefix: "/query", methods: ["POST"], upstream: { url: "http://svc.internal/query", service: "SVC" }, rules: [rule("query-cost", { limit: 20, costFrom: { header: "x-cost", max: 10 } })] },
  ],
  stores: { durable: { fallback: [] } },
  admin: { path: "/_sluice/metrics", tokenSecret: "ADMIN_TOKEN" },
};

let mf;
let isolates;
const forwarded = new Map(); // upstream path -> requests that reached it

before(async () => {
  ({ mf, isolates } = await startGatewayIsolates({
    count: ISOLATES,
    config: CONFIG,
    adminToken: ADMIN_TOKEN,
    // Every login fails (401, counted); every query says it cost 3.
    upstream: async (request) => {
      const path = new URL(request.url).pathname;
      forwarded.set(path, (forwarded.get(path) ?? 0) + 1);
      return path.startsWith("/login") ? new Response("no", { status: 401 }) : new Response("rows", { headers: { "x-cost": "3" } });
    },
    // One object for all: gw0 defines it, the others bind gw0's.
    durableObjects: (i) => ({ SLUICE_DO: { className: "TestSluiceDurableObject", useSQLite: true, ...(i === 0 ? {} : { scriptName: "gw0" }) } }),
  }));
});
after(() => mf?.dispose());

const post = (on, path, ip) => on.fetch(`http://gateway.test${path}`, { method: "POST", headers: { "cf-connecting-ip": ip } });

/** The sum over the isolates of `name`'s sample with `labels`. */
async function summed(name, labels) {
  let sum = 0;
  for (const on of isolates) {
    const response = await on.fetch("http://gateway.test/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(response.status, 200);
    sum += sample(parseExposition(await response.text()), name, labels);
  }
  return sum;
}

/** 30 requests at once, 10 from each isolate, all from one client; their statuses. */
async function burst(path, ip) {
  const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => post(isolates[i % ISOLATES], path, ip)));
  return Promise.all(responses.map(async (response) => (await response.text(), response.status)));
}

test("countWhen on the durable store: a burst from three isolates is charged exactly the limit, then every isolate refuses", async () => {
  const statuses = await burst("/login", "203.0.113.40");
  const counted = statuses.filter((status) => status === 401).length;
  assert.equal(counted + statuses.filter((status) => status === 429).length, 30);
  assert.ok(counted >= 5, `at least the limit was forwarded (${counted})`);
  // Never more charged than the limit allows, and no fewer: each forwarded 401 was one charge, or refused by the object.
  assert.equal(await summed("sluice_response_rule_charged_total", { route: "/login", rule: "failed-logins" }), 5);
  assert.equal(await summed("sluice_response_rule_not_counted_total", { route: "/login", rule: "failed-logins" }), counted - 5);
  const before = forwarded.get("/login") ?? 0;
  for (const on of isolates) assert.equal((await post(on, "/login", "203.0.113.40")).status, 429);
  assert.equal(forwarded.get("/login") ?? 0, before, "a spent client reaches no upstream, in any isolate");
  assert.equal((await post(isolates[1], "/login", "203.0.113.41")).status, 401, "another client has its own count");
});

test("costFrom on the durable store: a burst from three isolates is charged exactly the limit's units, then every isolate refuses", async () => {
  const statuses = await burst("/query", "198.51.100.40");
  const served = statuses.filter((status) => status === 200).length;
  assert.equal(served + statuses.filter((status) => status === 429).length, 30);
  // 20 units at 3 a response: 6 charged whole (18), then one charged the 2 left (exhausted); never more.
  assert.equal(await summed("sluice_response_rule_charged_total", { route: "/query", rule: "query-cost" }), 7);
  assert.equal(await summed("sluice_cost_from_total", { route: "/query", rule: "query-cost", source: "header" }), served);
  for (const on of isolates) assert.equal((await post(on, "/query", "198.51.100.40")).status, 429);
});
