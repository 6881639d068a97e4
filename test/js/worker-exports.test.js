// The shipped Worker (worker/index.js, wrangler.toml's main) exports every Durable Object class a
// gateway configuration may need bound, and wrangler.toml binds and migrates each of them: a
// configuration with live overrides (SluiceOverridesObject) runs on the shipped Worker as deployed.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";

import { startWorkers } from "./helpers/worker.js";

const root = new URL("../../", import.meta.url);
const toml = readFileSync(new URL("wrangler.toml", root), "utf8");
const main = readFileSync(new URL("worker/index.js", root), "utf8");
const ADMIN_TOKEN = "admin-token-for-worker-exports-0123456789";

// The classes of wrangler.toml's [[durable_objects.bindings]] (not commented out), and its migrations'.
const bound = [...toml.matchAll(/^\[\[durable_objects\.bindings\]\]\s*\nname = "([A-Z_]+)"\s*\nclass_name = "(\w+)"/gm)].map((m) => ({ name: m[1], className: m[2] }));
const migrated = [...toml.matchAll(/^new_sqlite_classes = \[([^\]]*)\]/gm)].flatMap((m) => [...m[1].matchAll(/"(\w+)"/g)].map((c) => c[1]));
const exported = [...main.matchAll(/^export \{ (\w+) \} from /gm)].map((m) => m[1]);

test("wrangler.toml binds and migrates every Durable Object class of the gateway, and worker/index.js exports each", () => {
  const classes = bound.map((b) => b.className).sort();
  for (const needed of ["SluiceDurableObject", "SluiceDashboardObject", "SluiceOverridesObject"]) assert.ok(classes.includes(needed), `wrangler.toml binds ${needed}`);
  assert.deepEqual(bound.find((b) => b.className === "SluiceOverridesObject")?.name, "SLUICE_OVERRIDES", "bound under liveOverrides' default binding");
  for (const className of classes) {
    assert.ok(exported.includes(className), `worker/index.js exports ${className}`);
    assert.ok(migrated.includes(className), `a new_sqlite_classes migration names ${className}`);
  }
});

let mf;
let worker;
before(async () => {
  // The shipped Worker with a configuration of live overrides (SLUICE_CONFIG), its classes bound as
  // wrangler.toml binds them: the Worker itself defines SluiceOverridesObject.
  const config = {
    routes: [{ prefix: "/api", methods: ["GET"], upstream: { url: "http://svc.internal/api", service: "DEMO_UPSTREAM" }, rules: [{ name: "api", algorithm: "fixed-window", limit: 2, windowSec: 3600, key: "apiKey:x-api-key", liveOverrides: { refreshMs: 100 } }] }],
    admin: { path: "/_admin", tokenSecret: "SLUICE_ADMIN_TOKEN" },
  };
  mf = await startWorkers([
    {
      name: "shipped",
      entry: "demo",
      bindings: { ENV: "production", SLUICE_ADMIN_TOKEN: ADMIN_TOKEN, SLUICE_CONFIG: JSON.stringify(config) },
      serviceBindings: { DEMO_UPSTREAM: async () => new Response("upstream ok") },
      durableObjects: Object.fromEntries(bound.map(({ name, className }) => [name, { className, useSQLite: true }])),
      kvNamespaces: { SLUICE_KV: "sluice-kv" },
    },
  ]);
  worker = await mf.getWorker("shipped");
});
after(() => mf?.dispose());

test("the shipped Worker runs a configuration with live overrides: an override put at the admin API raises the key's limit", async () => {
  const call = async (key) => {
    const response = await worker.fetch("http://gw.test/api", { headers: { "x-api-key": key } });
    await response.text();
    return response.status;
  };
  assert.deepEqual([await call("acme"), await call("acme"), await call("acme")], [200, 200, 429]);
  const put = await worker.fetch("http://gw.test/_admin/overrides/overrides", {
    method: "PUT",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "x-sluice-actor": "test" },
    body: JSON.stringify({ key: "key:partner", limit: 4 }),
  });
  assert.equal(put.status, 200, await put.text());
  const listed = await worker.fetch("http://gw.test/_admin/overrides/overrides", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(listed.status, 200);
  assert.match(await listed.text(), /key:partner/);
  // The table is re-read at most every refreshMs (100 ms): the partner's first request comes after that.
  await new Promise((done) => setTimeout(done, 150));
  const statuses = [];
  for (let i = 0; i < 5; i++) statuses.push(await call("partner"));
  assert.deepEqual(statuses, [200, 200, 200, 200, 429]);
});
