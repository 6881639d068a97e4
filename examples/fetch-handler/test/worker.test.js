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

test("10 requests a minute per client address, then 429 with the rate-limit headers", async () => {
  const send = () => mf.dispatchFetch("http://example.test/anything", { headers: { "cf-connecting-ip": "192.0.2.1" } });
  for (let i = 0; i < 10; i++) {
    const response = await send();
    assert.equal(response.status, 200);
    assert.equal(await response.text(), "ok");
    assert.equal(response.headers.get("x-ratelimit-remaining"), String(9 - i));
  }
  const denied = await send();
  assert.equal(denied.status, 429);
  assert.equal(denied.headers.get("x-ratelimit-limit"), "10");
  assert.ok(Number(denied.headers.get("retry-after")) >= 1);
  assert.match(denied.headers.get("ratelimit-policy") ?? "", /;q=10;w=60$/);
});
