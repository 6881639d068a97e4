// Auto-blocking on Redis across four isolates (the fixture Worker test/js/fixtures/auto-block/worker.js
// with STORE "redis", through the Upstash REST bridge to a real redis-server): the strikes and the block
// are Redis's, written by the store's compare-and-set, so every isolate counts toward one block and
// then enforces it. On the real clock: durations are hours, so nothing here depends on timing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { startWorkers } from "./helpers/worker.js";
import { startBridge } from "./helpers/redis-bridge.js";
import { startRedis } from "./helpers/redis-server.js";

const ISOLATES = 4;
const TOKEN = "test-token-auto-block-22";

let redis;
let bridge;
let mf;
const isolates = [];
before(async () => {
  redis = await startRedis();
  bridge = await startBridge({ redisPort: redis.port, token: TOKEN });
  const bindings = { ENV: "production", STORE: "redis", UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: TOKEN };
  mf = await startWorkers(Array.from({ length: ISOLATES }, (_, i) => ({ name: `w${i}`, entry: "autoBlock", bindings })));
  for (let i = 0; i < ISOLATES; i++) isolates.push(await mf.getWorker(`w${i}`));
});
after(async () => {
  await mf?.dispose();
  await bridge?.stop();
  await redis?.stop();
});

async function login(on, address) {
  const response = await isolates[on].fetch("http://ab.test/login", { method: "POST", headers: { "cf-connecting-ip": address } });
  await response.text();
  return [response.status, Number(response.headers.get("retry-after"))];
}

test("four isolates on Redis count one client's refusals exactly toward one block, which every isolate enforces", async () => {
  const client = "203.0.113.90";
  const statuses = [];
  // 4 admitted (4 an hour), then 6 refusals: the strikes. Round robin over the isolates.
  for (let i = 0; i < 10; i++) statuses.push((await login(i % ISOLATES, client))[0]);
  assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429, 429, 429, 429, 429]);
  // Then the block: 2 hours, longer than anything the hourly window could say, in every isolate.
  for (let on = 0; on < ISOLATES; on++) {
    const [status, retryAfter] = await login(on, client);
    assert.equal(status, 429, `isolate w${on}`);
    assert.ok(retryAfter > 3600 && retryAfter <= 7200, `isolate w${on}: Retry-After ${retryAfter}`);
  }
  let strikes = 0;
  let refused = 0;
  for (const isolate of isolates) {
    const counters = await (await isolate.fetch("http://ab.test/__test/counters")).json();
    strikes += counters.strikes;
    refused += counters.refusedWhileBlocked;
    assert.equal(counters.failures, 0);
  }
  assert.deepEqual([strikes, refused], [6, 4]);
  assert.equal((await login(1, "203.0.113.91"))[0], 200, "another client is not affected");
});

async function listed(on, key) {
  const response = await isolates[on].fetch("http://ab.test/__test/blocks");
  assert.equal(response.status, 200);
  return (await response.json()).filter((block) => block.key === key);
}

test("a block one isolate started on Redis is listed by every isolate (Redis's list), and a lift in another takes it off every list", async () => {
  const client = "192.0.2.92";
  const key = `ip:${client}`;
  // Only isolate w0 serves the client: 4 admitted, 6 strikes, then the block.
  const before = Date.now();
  for (let i = 0; i < 11; i++) await login(0, client);
  const after = Date.now();
  for (let on = 0; on < ISOLATES; on++) {
    const blocks = await listed(on, key);
    assert.equal(blocks.length, 1, `isolate w${on}`);
    assert.equal(blocks[0].rule, "login-redis");
    // The block's end: two hours from its start, which was during the requests above.
    assert.ok(blocks[0].untilMs >= before + 7_200_000 - 1000 && blocks[0].untilMs <= after + 7_200_000 + 1000, `isolate w${on}: ${blocks[0].untilMs}`);
  }
  const lift = await isolates[3].fetch("http://ab.test/__test/lift", { method: "POST", body: JSON.stringify({ rule: "login-redis", key }) });
  assert.deepEqual(await lift.json(), { lifted: true });
  for (let on = 0; on < ISOLATES; on++) assert.deepEqual(await listed(on, key), [], `isolate w${on} after the lift`);
  // The block is gone in Redis too (w3, which lifted it and never remembered its denial): the rule's own
  // window (4 an hour) refuses, no longer the block.
  const [status, retryAfter] = await login(3, client);
  assert.equal(status, 429);
  assert.ok(retryAfter <= 3600, `Retry-After ${retryAfter}`);
});
