// Runs what `npm run build` (wrangler deploy --dry-run --outdir dist) would upload, in workerd.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Miniflare } from "miniflare";

let mf;
before(async () => {
  mf = new Miniflare({
    modules: true,
    scriptPath: "dist/index.js",
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: "2026-04-20",
  });
  await mf.ready;
});
after(() => mf.dispose());

const from = (address) => ({ headers: { "cf-connecting-ip": address } });

test("a client gets 5 requests a minute, then 429 with Retry-After", async () => {
  for (let i = 0; i < 5; i++) {
    const response = await mf.dispatchFetch("http://example.test/api/hello", from("192.0.2.1"));
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { hello: "world", left: 4 - i });
    assert.equal(response.headers.get("x-ratelimit-limit"), "5");
    assert.equal(response.headers.get("x-ratelimit-remaining"), String(4 - i));
    assert.match(response.headers.get("ratelimit") ?? "", /;r=\d+;t=\d+$/);
  }
  const denied = await mf.dispatchFetch("http://example.test/api/hello", from("192.0.2.1"));
  assert.equal(denied.status, 429);
  assert.ok(Number(denied.headers.get("retry-after")) >= 1);
  assert.equal((await denied.json()).code, "rate_limited");
});

test("another client still has its own 5", async () => {
  const response = await mf.dispatchFetch("http://example.test/api/hello", from("198.51.100.7"));
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("x-ratelimit-remaining"), "4");
});

test("orders: 2 per user, then the route's own 429", async () => {
  const order = (userId) => mf.dispatchFetch("http://example.test/api/orders", { method: "POST", headers: { "cf-connecting-ip": "203.0.113.9", "x-user-id": userId } });
  assert.deepEqual(await (await order("ada")).json(), { ordered: true, left: 1 });
  assert.deepEqual(await (await order("ada")).json(), { ordered: true, left: 0 });
  const denied = await order("ada");
  assert.equal(denied.status, 429);
  const body = await denied.json();
  assert.equal(body.error, "slow down");
  assert.ok(body.retryAfterMs > 0);
  assert.ok(Number(denied.headers.get("retry-after")) >= 1, "sluice adds Retry-After to the custom response");
  assert.equal((await order("grace")).status, 200);
});
