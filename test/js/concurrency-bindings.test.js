// The attacker's test for a durable concurrency limit whose Durable Object binding env lacks: falling
// back to each isolate's memory would admit max per isolate (N isolates: N x max), and failMode "open"
// would admit everyone. Instead every surface (concurrency(), createConcurrencyLimiter, a WebSocket
// connection limit) fails with a SluiceConfigError naming the `binding` field, and admits nobody.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { startWorkers } from "./helpers/worker.js";

const ISOLATES = 3;
let mf;
let workers;

before(async () => {
  const names = Array.from({ length: ISOLATES }, (_, i) => `bare${i}`);
  // No durableObjects: env has no SLUICE_DO, as when wrangler.toml forgot [[durable_objects.bindings]].
  mf = await startWorkers(names.map((name) => ({ name, entry: "concurrency" })));
  workers = await Promise.all(names.map((name) => mf.getWorker(name)));
});
after(() => mf?.dispose());

const open = (isolate, path, user, id, headers = {}) => workers[isolate].fetch(`http://conn.test${path}?id=${id}`, { headers: { "x-user": user, ...headers } });

for (const [path, max, headers] of [
  ["/defaults", 2, {}], // fallback true, failMode open (the defaults)
  ["/plain", 2, {}], // createConcurrencyLimiter.handle, the defaults
  ["/ws", 2, { upgrade: "websocket" }], // fallback false, failMode open, with a message limiter
]) {
  test(`a missing Durable Object binding admits nobody across isolates (not N x max): ${path}`, async () => {
    const responses = await Promise.all(Array.from({ length: ISOLATES * (max + 1) }, (_, i) => open(i % ISOLATES, path, "mallory", `${path}-${i}`, headers)));
    const admitted = responses.filter((response) => response.status === 200 || response.status === 101);
    for (const response of admitted) {
      response.webSocket?.accept();
      response.webSocket?.close(1000, "done");
    }
    assert.ok(admitted.length <= max, `${path}: ${admitted.length} admitted across ${ISOLATES} isolates, max ${max}`);
    assert.equal(admitted.length, 0, `${path}: nothing can count, so nothing is admitted`);
    for (const response of responses) {
      assert.equal(response.status, 500, `${path}: a misconfiguration, not a refusal`);
      const body = await response.json();
      assert.equal(body.error, "SluiceConfigError");
      assert.equal(body.field, "binding");
      assert.match(body.message, /"SLUICE_DO", which env does not have/);
    }
  });
}
