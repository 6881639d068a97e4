// Block durations on the Redis store (cpp/include/sluice/block.hpp): four Miniflare isolates reach one
// real redis-server through the Upstash REST bridge. The denial that exceeds a blocking rule is
// written by the same compare-and-set as a charge, so every isolate then reads the block from Redis.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { rule, startStores } from "./fixtures/stores/harness.js";
import { startBridge } from "./helpers/redis-bridge.js";
import { startRedis } from "./helpers/redis-server.js";

const ISOLATES = 4;
const HOUR = 3_600_000;
const BLOCK_MS = 2 * HOUR;
const TOKEN = "test-token-block-22";

let redis;
let bridge;
let stores;
before(async () => {
  redis = await startRedis();
  bridge = await startBridge({ redisPort: redis.port, token: TOKEN });
  stores = await startStores({ isolates: ISOLATES, bindings: { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: TOKEN } });
});
after(async () => {
  await stores?.dispose();
  await bridge?.stop();
  await redis?.stop();
});

test("a burst over four isolates admits exactly the limit, then every isolate reads the block from Redis", async () => {
  const plain = rule({ name: "block-redis", algorithm: "sliding-log", limit: 10, windowMs: HOUR });
  const blocking = { ...plain, id: `${plain.id}|block${BLOCK_MS}`, blockMs: BLOCK_MS };
  const checks = [{ rule: blocking, key: "attacker", cost: 1 }];
  const store = { kind: "redis", options: { prefix: "block:", timeoutMs: 5000, clockToleranceMs: 2000 } };
  const results = await Promise.all(
    Array.from({ length: 60 }, (_, i) => stores.send(i % ISOLATES, { op: "decide", store, checks, nowMs: Date.now() })),
  );
  assert.equal(results.filter((r) => r.outcome.allowed).length, 10);
  assert.ok(results.every((r) => r.outcome.store === "redis"));
  // Requests the compare-and-set could not set went in the key's log (redis-append-script.js); a
  // peek's compare-and-set folds the log into the key's state.
  await stores.send(0, { op: "decide", store, checks, nowMs: Date.now(), peek: true });
  // What Redis holds for the key is the blocked form (first word ~until, negative), not a log of 10 entries.
  const response = await fetch(bridge.url, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(["GET", `block:s:${blocking.id}:attacker`]),
  });
  // A value is `<state bytes, base64>.<tag of the write>` (redis.js): the state is before the dot.
  const stored = Buffer.from(String((await response.json()).result).split(".")[0], "base64");
  assert.equal(stored.length, 24, "a blocked state holds no entries");
  assert.ok(stored.readBigInt64LE(8) < 0n, "the stored state is a block");
  // Throttling would say at most an hour (the log's window); the block says up to two. Asked from every
  // isolate, after the burst: each decision is checked against Redis's state by the compare-and-set.
  for (let isolate = 0; isolate < ISOLATES; isolate++) {
    const { outcome } = await stores.send(isolate, { op: "decide", store, checks, nowMs: Date.now() });
    assert.equal(outcome.allowed, false);
    assert.ok(outcome.retryAfterMs > HOUR && outcome.retryAfterMs <= BLOCK_MS, `isolate ${isolate}: retryAfterMs ${outcome.retryAfterMs}`);
  }
});
