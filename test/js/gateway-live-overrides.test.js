// A gateway rule's live table of overrides (`liveOverrides`): checked at start-up naming its path, its
// binding required of the deployment; the running gateway applies a change made through
// <admin.path>/overrides/<name> once its copy is refreshMs old, and not before. The table's Durable
// Object is given through env (the binding is the seam): here a stand-in keeping the object's contract
// (list, put, remove); SluiceOverridesObject itself is proved by overrides-live.test.js.
import assert from "node:assert/strict";
import { test } from "node:test";

const { ConfigError, validateConfig } = await import("../../worker/gateway/config.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");

const TOKEN = "o".repeat(40);
const config = (rule, more = {}) => ({
  routes: [{ prefix: "/api", methods: ["GET"], upstream: { url: "https://api.internal/api", service: "UP" }, rules: [{ name: "api", algorithm: "fixed-window", limit: 2, windowSec: 60, key: "apiKey:x-api-key", ...rule }] }],
  ...more,
});

function refusedAt(rule, more) {
  try {
    validateConfig(config(rule, more));
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.path;
  }
  return "(accepted)";
}

// The live table's object as env holds it: a namespace whose stub lists, puts and removes overrides.
function tableNamespace() {
  const state = { version: 0, overrides: [], puts: [] };
  const stub = {
    list: async () => ({ version: state.version, overrides: state.overrides.map((o) => ({ ...o })) }),
    put: async (override, actor) => {
      state.overrides = [...state.overrides.filter((o) => o.key !== override.key), override];
      state.puts.push(actor);
      return { ok: true, version: ++state.version };
    },
    remove: async () => ({ ok: true, version: state.version }),
  };
  return { state, namespace: { idFromName: (name) => `id:${name}`, get: () => stub } };
}

test("a rule's liveOverrides is checked at start-up, naming its path", () => {
  const rule = validateConfig(config({ liveOverrides: { refreshMs: 1000 } })).routes[0].rules[0];
  assert.deepEqual(rule.liveOverrides, { binding: "SLUICE_OVERRIDES", name: "overrides", refreshMs: 1000 });
  assert.equal(refusedAt({ liveOverrides: { refreshMs: 50 } }), "routes[0].rules[0].liveOverrides.refreshMs");
  assert.equal(refusedAt({ liveOverrides: { binding: "not a binding" } }), "routes[0].rules[0].liveOverrides.binding");
  assert.equal(refusedAt({ liveOverrides: { name: "a/b" } }), "routes[0].rules[0].liveOverrides.name");
  assert.equal(refusedAt({ liveOverrides: { refresh: 1000 } }), "routes[0].rules[0].liveOverrides.refresh");
  assert.equal(refusedAt({ liveOverrides: {}, overrides: [{ key: "key:a", limit: 3 }] }), "routes[0].rules[0].liveOverrides");
  // Started with its env, a gateway whose table binding is missing does not start, naming it.
  assert.throws(
    () => createGateway(validateConfig(config({ liveOverrides: {} })), { env: { UP: { fetch() {} } }, log() {} }),
    (error) => error instanceof ConfigError && error.path === "routes[0].rules[0].liveOverrides.binding",
  );
});

test("the running gateway applies a change made at <admin.path>/overrides/<name> once its copy is refreshMs old, not before", async () => {
  let now = Date.UTC(2030, 0, 1);
  const { state, namespace } = tableNamespace();
  const raw = config({ name: `live-${Math.random().toString(36).slice(2, 10)}`, liveOverrides: { refreshMs: 1000 } }, { admin: { path: "/_admin", tokenSecret: "ADMIN" } });
  const env = { UP: { fetch: async () => new Response("ok") }, ADMIN: TOKEN, SLUICE_OVERRIDES: namespace };
  const gateway = createGateway(validateConfig(raw), { now: () => now, env, log() {} });
  const ctx = { waitUntil() {} };
  const call = async (key) => (await gateway.fetch(new Request("https://gw.test/api", { headers: { "x-api-key": key } }), env, ctx)).status;
  const admin = (init, token = TOKEN, path = "/_admin/overrides/overrides") =>
    gateway.fetch(new Request(`https://gw.test${path}`, { ...init, headers: { authorization: `Bearer ${token}`, "x-sluice-actor": "oncall", ...init.headers } }), env, ctx);

  assert.equal(await call("acme"), 200); // the first request fetches the (empty) table
  const put = { method: "PUT", body: JSON.stringify({ key: "key:acme", limit: 5 }) };
  assert.equal((await admin(put, "wrong")).status, 401);
  assert.equal(state.puts.length, 0, "a wrong token changes nothing");
  assert.equal((await admin(put, TOKEN, "/_admin/overrides/other")).status, 404);
  assert.equal((await admin(put)).status, 200);
  assert.deepEqual(state.puts, ["oncall"]);

  // 1 ms before the copy is refreshMs old: still the rule's own limit of 2.
  now += 999;
  assert.deepEqual([await call("acme"), await call("acme")], [200, 429]);
  // At refreshMs: the override's 5 (an override's limit is a rule of its own, counted apart).
  now += 1;
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push(await call("acme"));
  assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
  assert.deepEqual([await call("globex"), await call("globex"), await call("globex")], [200, 200, 429]);
});
