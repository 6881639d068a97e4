// Per-key overrides from configuration (worker/src/features/overrides/overrides.js), through the
// middleware (memory store, Node, app.request()). The attacker's test first: a client cannot borrow a
// partner's override by spelling its own key like the partner's. Overrides name keys as the key
// functions produce them: apiKey() gives "key:<value>".
import assert from "node:assert/strict";
import { test } from "node:test";

const { Hono } = await import("hono");
const { rateLimit, apiKey, overrideList } = await import("../../worker/src/hono.js");
const { SluiceConfigError } = await import("../../worker/src/sluice.js");

const T0 = Date.UTC(2030, 0, 1);

function app(overrides) {
  const app = new Hono();
  app.get("/api", rateLimit({ key: apiKey("x-api-key"), limit: 4, windowSec: 60, algorithm: "fixed-window", clock: () => T0, overrides: overrideList(overrides) }), (c) => c.text("ok"));
  return app;
}

async function admitted(server, key, n) {
  let count = 0;
  for (let i = 0; i < n; i++) if ((await server.request("/api", { headers: { "x-api-key": key } })).status === 200) count++;
  return count;
}

test("a partner's key gets its override and a noisy tenant's prefix its own; look-alike keys get the default", async () => {
  const server = app([
    { key: "key:partner-acme", limit: 40 },
    { prefix: "key:tenant-noisy-", limit: 1 },
    { prefix: "key:tenant-noisy-vip-", limit: 8 },
  ]);
  assert.equal(await admitted(server, "partner-acme", 50), 40);
  // Look-alikes of the partner's exact key: other keys, the default limit, counted apart.
  assert.equal(await admitted(server, "partner-acm", 10), 4);
  assert.equal(await admitted(server, "PARTNER-ACME", 10), 4);
  assert.equal(await admitted(server, "partner-acme-2", 10), 4);
  // Prefixes: the longest that matches wins.
  assert.equal(await admitted(server, "tenant-noisy-7", 10), 1);
  assert.equal(await admitted(server, "tenant-noisy-vip-1", 10), 8);
  assert.equal(await admitted(server, "tenant-quiet-1", 10), 4);
});

test("an overridden key's responses say its own limit", async () => {
  const server = app([{ key: "key:partner-acme", limit: 40 }]);
  const partner = await server.request("/api", { headers: { "x-api-key": "partner-acme" } });
  const other = await server.request("/api", { headers: { "x-api-key": "someone" } });
  assert.deepEqual([partner.headers.get("x-ratelimit-limit"), partner.headers.get("x-ratelimit-remaining")], ["40", "39"]);
  assert.deepEqual([other.headers.get("x-ratelimit-limit"), other.headers.get("x-ratelimit-remaining")], ["4", "3"]);
});

test("overrides are refused naming the field", () => {
  const refused = (overrides, extra = {}) => {
    try {
      rateLimit({ key: apiKey(), limit: 4, windowSec: 60, overrides: overrideList(overrides), ...extra });
    } catch (error) {
      assert.ok(error instanceof SluiceConfigError, String(error));
      return error.field;
    }
    return "(accepted)";
  };
  assert.equal(refused([]), "overrides");
  assert.equal(refused([{ key: "a", limit: 0 }]), "overrides[0].limit");
  assert.equal(refused([{ key: "a", prefix: "b", limit: 2 }]), "overrides[0].key");
  assert.equal(refused([{ limit: 2 }]), "overrides[0].key");
  assert.equal(refused([{ key: "a", limit: 2 }, { key: "a", limit: 3 }]), "overrides[1].key");
  assert.equal(refused([{ key: "a", limit: 2, burst: 3 }]), "overrides[0].burst");
  assert.equal(refused([1, 2, 3, 4, 5, 6, 7, 8].map((limit) => ({ key: `k${limit}`, limit: limit + 10 }))), "overrides");
  assert.equal(refused([{ key: "a", limit: 2 ** 40 }]), "overrides");
  assert.equal(refused([{ key: "a", limit: 2 }], { limit: () => 3 }), "overrides");
  assert.equal(refused([{ key: "a", limit: 2 }, { prefix: "b", limit: 400 }]), "(accepted)");
});

test("a list of overrides not wrapped in overrideList() is refused naming overrides and overrideList; inside rules, the rule's path", () => {
  const refusal = (options) => {
    try {
      rateLimit({ key: apiKey(), ...options });
    } catch (error) {
      assert.ok(error instanceof SluiceConfigError, String(error));
      return [error.field, /overrideList\(/.test(error.message)];
    }
    return ["(accepted)", false];
  };
  assert.deepEqual(refusal({ limit: 4, windowSec: 60, overrides: [{ key: "a", limit: 2 }] }), ["overrides", true]);
  assert.deepEqual(refusal({ rules: [{ limit: 4, windowSec: 60 }, { limit: 9, windowSec: 1, overrides: [{ key: "a", limit: 2 }] }] }), ["rules[1].overrides", true]);
  assert.deepEqual(refusal({ rules: [{ limit: 4, windowSec: 60, overrides: overrideList([{ key: "a", limit: 0 }]) }] }), ["rules[0].overrides[0].limit", false]);
});
