// Auto-blocking in gateway.config.json (a rule's `autoBlock`): checked at start-up naming its path; the
// running gateway blocks a client its rule keeps refusing, counts it in /metrics, and its blocks admin
// endpoint (<admin.path>/blocks, the admin token) lists the block and lifts it, logging no key.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseExposition, sample } from "./helpers/prometheus.js";

const { ConfigError, validateConfig } = await import("../../worker/gateway/config.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");

const TOKEN = "a".repeat(40);
const config = (rule, more = {}) => ({
  routes: [{ prefix: "/login", methods: ["POST"], upstream: { url: "https://api.internal/login", service: "UP" }, rules: [{ name: "login", algorithm: "fixed-window", limit: 2, windowSec: 10, key: "ip", ...rule }] }],
  ...(rule.store === "kv" ? { stores: { kv: { binding: "SLUICE_KV" } } } : {}),
  ...more,
});

function refusedAt(rule, more) {
  try {
    validateConfig(config(rule, more));
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${error}`);
    return error.path;
  }
  return "(accepted)";
}

test("a rule's autoBlock is checked at start-up, naming its path", () => {
  const rule = validateConfig(config({ autoBlock: { after: 3, withinSec: 60, blockSec: 300 } })).routes[0].rules[0];
  assert.deepEqual(rule.autoBlock, { after: 3, withinMs: 60_000, blockMs: 300_000 });
  assert.equal(refusedAt({ autoBlock: { after: 0, withinSec: 60, blockSec: 300 } }), "routes[0].rules[0].autoBlock.after");
  assert.equal(refusedAt({ autoBlock: { after: 3, blockSec: 300 } }), "routes[0].rules[0].autoBlock.withinSec");
  assert.equal(refusedAt({ autoBlock: { after: 3, withinSec: 60, blockMs: 1.5 } }), "routes[0].rules[0].autoBlock.blockMs");
  assert.equal(refusedAt({ autoBlock: { after: 3, withinSec: 60, blockSec: 300, forever: true } }), "routes[0].rules[0].autoBlock.forever");
  assert.equal(refusedAt({ autoBlock: 3 }), "routes[0].rules[0].autoBlock");
  assert.equal(refusedAt({ store: "kv", autoBlock: { after: 3, withinSec: 60, blockSec: 300 } }), "routes[0].rules[0].autoBlock");
  assert.equal(refusedAt({ mode: "shadow", autoBlock: { after: 3, withinSec: 60, blockSec: 300 } }), "routes[0].rules[0].autoBlock");
  assert.equal(refusedAt({ rollout: 0.5, autoBlock: { after: 3, withinSec: 60, blockSec: 300 } }), "routes[0].rules[0].autoBlock");
  // <admin.path>/blocks is the endpoint: a route there would be hidden.
  const hiding = config({}, { admin: { path: "/_admin", tokenSecret: "ADMIN" } });
  hiding.routes.push({ prefix: "/_admin/blocks", methods: ["GET"], upstream: { url: "https://api.internal/x" }, rules: [{ name: "x", algorithm: "fixed-window", limit: 1, windowSec: 1, key: "ip" }] });
  assert.throws(() => validateConfig(hiding), (error) => error.path === "admin.path");
});

test("the running gateway blocks a client its rule keeps refusing, counts it in /metrics, and its admin endpoint lists and lifts the block", async () => {
  let now = Date.UTC(2030, 0, 1);
  const lines = [];
  const name = `gw-ab-${Math.random().toString(36).slice(2, 10)}`;
  const raw = config({ name, autoBlock: { after: 3, withinSec: 60, blockSec: 300 } }, { admin: { path: "/_admin", tokenSecret: "ADMIN" } });
  const gateway = createGateway(validateConfig(raw), { now: () => now, log: (line) => lines.push(line) });
  const env = { UP: { fetch: async () => new Response("ok") }, ADMIN: TOKEN };
  const ctx = { waitUntil() {} };
  const login = async (address = "198.51.100.9") => {
    const response = await gateway.fetch(new Request("https://gw.test/login", { method: "POST", headers: { "cf-connecting-ip": address } }), env, ctx);
    return [response.status, response.headers.get("retry-after")];
  };
  const admin = (path, init = {}) => gateway.fetch(new Request(`https://gw.test/_admin${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, ...init.headers } }), env, ctx);

  const seen = [];
  for (let i = 0; i < 5; i++) seen.push((await login())[0]);
  assert.deepEqual(seen, [200, 200, 429, 429, 429]);
  assert.deepEqual(await login(), [429, "300"]);
  now += 60_000; // six windows later: still refused, to the block's end
  assert.deepEqual(await login(), [429, "240"]);
  assert.deepEqual(await login("198.51.100.10"), [200, null]);

  const families = parseExposition(await (await admin("")).text());
  assert.deepEqual(
    ["strikes", "blocks_started", "refused"].map((kind) => sample(families, `sluice_autoblock_${kind}_total`, { rule: name })),
    [3, 1, 2],
  );

  assert.equal((await gateway.fetch(new Request("https://gw.test/_admin/blocks", { headers: { authorization: "Bearer wrong" } }), env, ctx)).status, 401);
  const listed = await (await admin("/blocks")).json();
  assert.deepEqual(listed, { blocks: [{ rule: name, key: "ip:198.51.100.9", untilMs: Date.UTC(2030, 0, 1) + 300_000 }] });
  const lifted = await admin("/blocks", { method: "DELETE", headers: { "x-sluice-actor": "oncall" }, body: JSON.stringify({ rule: name, key: "ip:198.51.100.9" }) });
  assert.equal(lifted.status, 200);
  assert.deepEqual(await login(), [200, null]);
  const audit = lines.map((line) => JSON.parse(line)).find((entry) => entry.event === "sluice.block.lift");
  assert.deepEqual([audit?.actor, audit?.rule], ["oncall", name]);
  assert.ok(lines.every((line) => !line.includes("198.51.100.9")), "no log line holds the blocked key");
});
