// Hostile requests against the running gateway (the real gateway on sluice's real limiter, in workerd):
// random methods, paths and header values must never make it fail (no 500, no uncaught exception), and
// no variation of what a client controls besides its address may buy it more than its limit.
// Seeded, so a failure replays.

import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import { random } from "../../bench/worker/workload.js"; // the bench's seeded PRNG (mulberry32)
import { startGateway } from "./fixtures/gateway/harness.js";

let gateway;
before(async () => {
  gateway = await startGateway();
});
after(() => gateway.dispose());
beforeEach(() => gateway.reset());

const next = random(0x5eed5);
const pick = (list) => list[Math.floor(next() * list.length)];
const int = (n) => Math.floor(next() * n);

// Printable ASCII (what a header value may carry through fetch), in runs up to `max` long.
function junk(max) {
  const length = int(max + 1);
  let text = "";
  for (let i = 0; i < length; i++) text += String.fromCharCode(0x20 + int(0x5f));
  return text.trim();
}

const HOSTILE_ADDRESSES = [
  "",
  "unknown",
  "192.0.2.1, 198.51.100.1",
  "999.1.1.1",
  "01.02.03.04",
  "0x7f.0.0.1",
  "192.0.2.1:8080",
  "[2001:db8::1]:443",
  "2001:db8::1%eth0",
  "::ffff:192.0.2.1",
  "::",
  "1".repeat(5_000),
  "2001:db8:" + "0:".repeat(40) + "1",
  "192.0.2.1\t",
  '"><script>',
  "../../etc/passwd",
];

const PATHS = [
  "/v1/geo/x",
  "/v1/geo/..%2f..%2fadmin",
  "/v1/geo/%2e%2e/%2e%2e/secret",
  "/v1/geo/a/../../b",
  "/v1/geo/%00",
  "/v1/geo/%ZZ",
  "/v1/geo//double//slash",
  "/v1/geo/" + "a".repeat(3_000),
  "/v1/geo/x?" + "q=".repeat(500),
  "/v1/shadow/x",
  "/v1/rollout/x",
  "/v1/bypass/x",
  "/v1/exact/x",
  "/v1/approx/x",
  "/svc/x",
  "/_sluice/metrics",
  "/V1/GEO/x",
  "/v1/geox",
  "/",
  "/nope/%2f",
];

const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

function hostileHeaders() {
  const headers = {};
  if (next() < 0.8) headers["cf-connecting-ip"] = next() < 0.5 ? pick(HOSTILE_ADDRESSES) : junk(60);
  if (next() < 0.5) headers["x-forwarded-for"] = `${junk(40)}, ${pick(HOSTILE_ADDRESSES)}`;
  if (next() < 0.5) headers.authorization = pick(["Bearer ", "Bearer", "Basic x", `Bearer ${junk(2_000)}`, junk(100)]);
  if (next() < 0.3) headers["x-api-key"] = junk(300);
  if (next() < 0.3) headers["content-type"] = pick(["application/json", junk(50), "multipart/form-data; boundary=" + junk(20)]);
  if (next() < 0.2) headers.forwarded = `for=${junk(30)}`;
  if (next() < 0.2) headers.connection = pick(["close", "keep-alive, x-evil", junk(30)]);
  return headers;
}

test("300 hostile requests: every answer is one the gateway means to give, and nothing throws", async () => {
  const statuses = new Map();
  for (let i = 0; i < 300; i++) {
    const method = next() < 0.6 ? "GET" : pick(METHODS); // mostly GET, so that many requests get as far as the upstream
    const path = pick(PATHS);
    const hasBody = method !== "GET" && method !== "HEAD" && next() < 0.7;
    const init = { method, headers: hostileHeaders(), body: hasBody ? junk(5_000) : undefined };
    const response = await gateway.fetch(path, init);
    const text = await response.text();
    const what = `request ${i}: ${method} ${path.slice(0, 60)} ${JSON.stringify(init.headers).slice(0, 200)}`;
    assert.ok([200, 204, 400, 401, 404, 405, 429, 503].includes(response.status), `${what} -> ${response.status} ${text.slice(0, 200)}`);
    if (response.status >= 400 && method !== "HEAD") {
      const body = JSON.parse(text); // every error the gateway writes is JSON with a code
      assert.equal(typeof body.code, "string", what);
    }
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  }
  const lines = await gateway.waitForLogs(1);
  assert.deepEqual(lines.filter((line) => typeof line.error === "string" && line.error.startsWith("internal error")), []);
  assert.doesNotMatch(gateway.stderr(), /Uncaught/);
  // The mix must include real work, not only refusals.
  assert.ok((statuses.get(200) ?? 0) > 20, `statuses ${JSON.stringify([...statuses])}`);
  assert.ok((statuses.get(429) ?? 0) > 0, `statuses ${JSON.stringify([...statuses])}`);
});

test("one address gets its limit and no more, whatever else the client varies", async () => {
  // /v1/geo allows 3 requests per minute per address. The client keeps its address (in the spellings
  // that canonicalise to it) and varies everything else it controls.
  const spellings = ["192.0.2.77", "::ffff:192.0.2.77", "::ffff:c000:24d", "0:0:0:0:0:ffff:c000:024d"];
  let admitted = 0;
  for (let i = 0; i < 40; i++) {
    const headers = { ...hostileHeaders(), "cf-connecting-ip": pick(spellings) };
    const query = next() < 0.5 ? `?${junk(20).replace(/[#?]/g, "")}` : "";
    const path = pick(["/v1/geo/x", "/v1/geo/y/z", "/v1/geo/x/", "/v1/geo/%78"]) + encodeURI(query);
    const response = await gateway.fetch(path, { method: pick(["GET", "HEAD", "POST"]), headers });
    await response.arrayBuffer();
    if (response.status === 200) admitted++;
    else assert.equal(response.status, 429, `request ${i}: ${path} -> ${response.status}`);
  }
  assert.equal(admitted, 3);
});

test("addresses in one IPv6 /64 share a limit; the next /64 has its own", async () => {
  let admitted = 0;
  for (let i = 0; i < 10; i++) {
    const host = [int(65536), int(65536), int(65536), int(65536)].map((n) => n.toString(16)).join(":");
    const response = await gateway.fetch("/v1/geo/x", { headers: { "cf-connecting-ip": `2001:db8:1:2:${host}` } });
    await response.arrayBuffer();
    if (response.status === 200) admitted++;
  }
  assert.equal(admitted, 3);
  const neighbour = await gateway.fetch("/v1/geo/x", { headers: { "cf-connecting-ip": "2001:db8:1:3::1" } });
  await neighbour.arrayBuffer();
  assert.equal(neighbour.status, 200);
});
