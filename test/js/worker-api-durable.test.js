// peek, get and reset on store: 'durable', in workerd (miniflare): two Workers stand for two isolates
// sharing the Durable Object, through the middleware's handle (routes /api/durable* of the fixture
// Worker); and a durable store whose binding env lacks, which must fail, not fall back to memory.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { from, startWorkers, storeBindings } from "./helpers/worker.js";

const T0 = Date.UTC(2030, 0, 1);
const HOME = "fixture";
const OBJECT = "sluice/1/0"; // the one object of shards: 1

let mf;
let a;
let b;

before(async () => {
  mf = await startWorkers(
    [HOME, "fixture-b"].map((name) => ({ name, entry: "fixture", bindings: { ENV: "production" }, ...storeBindings(name, HOME, "TestSluiceDurableObject") })),
  );
  a = await mf.getWorker(HOME);
  b = await mf.getWorker("fixture-b");
  const send = (body) => a.fetch("http://fixture/__test/object", { method: "POST", body: JSON.stringify(body) });
  assert.equal((await send({ name: OBJECT, method: "setKnob", args: ["clock", T0] })).status, 200);
  for (const worker of [a, b]) {
    assert.equal((await worker.fetch("http://fixture/__test/clock", { method: "POST", body: JSON.stringify({ now: T0 }) })).status, 200);
  }
});
after(() => mf.dispose());

async function call(worker, path, address, init = {}) {
  const response = await worker.fetch(`http://fixture${path}`, { ...init, headers: from(address).headers });
  return { status: response.status, body: await response.json() };
}

test("peek and get charge nothing, in any isolate; reset in one isolate frees the key for all", async () => {
  const client = "192.0.2.50";
  assert.equal((await call(a, "/api/durable", client)).status, 200);
  assert.equal((await call(b, "/api/durable", client)).status, 200);
  for (let i = 0; i < 4; i++) {
    const peeked = await call(i % 2 === 0 ? a : b, "/api/durable/peek", client);
    assert.deepEqual([peeked.body.allowed, peeked.body.remaining, peeked.body.store], [true, 0, "durable"], "one more request would be the last");
  }
  assert.equal((await call(b, "/api/durable/get", client)).body.remaining, 0);
  assert.equal((await call(a, "/api/durable", client)).status, 200, "the peeks left the third request its place");
  assert.equal((await call(b, "/api/durable", client)).status, 429);
  assert.equal((await call(a, "/api/durable/get", client)).body.allowed, false);

  assert.deepEqual((await call(b, "/api/durable/reset", client, { method: "POST" })).body, { reset: true });
  const after = await call(a, "/api/durable", client);
  assert.equal(after.status, 200);
  assert.equal(after.body.decision.remaining, 2, "back to the full quota (3), less this request");
  assert.equal((await call(a, "/api/durable", "192.0.2.51")).body.decision.remaining, 2, "another key was never touched");
});

test("store 'durable' whose binding env lacks: a SluiceConfigError naming it, not a quiet memory fallback", async () => {
  for (let i = 0; i < 2; i++) {
    const { status, body } = await call(a, "/api/unbound", "192.0.2.60");
    assert.equal(status, 500);
    assert.deepEqual([body.error, body.field], ["SluiceConfigError", "bindings.durable"]);
    assert.match(body.message, /"NOT_BOUND"/);
  }
});
