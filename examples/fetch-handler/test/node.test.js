// The same package under plain Node (no workerd, no bundler): "sluice" loads its .wasm from the file
// beside it and decides with the memory store, as a script or a Node test suite would use it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createLimiter, isolateStats } from "sluice";

test("createLimiter decides in Node with the memory store", async () => {
  const limiter = createLimiter({ key: (request) => request.headers.get("x-client") ?? undefined, limit: 3, windowSec: 60 });
  const request = new Request("http://example.test/", { headers: { "x-client": "c1" } });
  const allowed = [];
  for (let i = 0; i < 4; i++) {
    const decision = await limiter.limit(request, {}, undefined);
    allowed.push(decision.allowed);
    if (decision.allowed) assert.equal(decision.store, "memory");
  }
  assert.deepEqual(allowed, [true, true, true, false]);
  assert.equal(limiter.limitedResponse(await limiter.limit(request, {}, undefined)).status, 429);
  assert.ok(isolateStats().instancesCreated >= 1, "one sluice.wasm instance was created in this process");
});
