// Block durations on the shared stores (cpp/include/sluice/block.hpp): a key that exceeds a blocking
// rule is blocked in the Durable Object, so every isolate sees the same block, for its whole length,
// whatever the window says, and a restarted object still has it.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { T0, rule, startStores } from "./fixtures/stores/harness.js";

const BLOCK_MS = 600_000;
const blocking = (fields) => {
  const plain = rule(fields);
  return { ...plain, id: `${plain.id}|block${BLOCK_MS}`, blockMs: BLOCK_MS };
};

async function setClock(send, name, nowMs) {
  await send(0, { op: "object", name, method: "setKnob", args: ["clock", nowMs] });
}

describe("blocking rules on the durable store", () => {
  let stores;
  before(async () => {
    stores = await startStores({ isolates: 3 });
  });
  after(() => stores.dispose());

  test("three isolates admit exactly the limit, then all of them see the key blocked past the window, across a restart", async () => {
    const { send } = stores;
    const store = { kind: "durable", options: { name: "block" } };
    const object = "block/1/0";
    const exceeded = T0 + 15_000;
    await setClock(send, object, exceeded);
    const r = blocking({ name: "block", limit: 5, windowMs: 60_000 });
    const check = [{ rule: r, key: "attacker", cost: 1 }];
    // 3 isolates x 10 requests in flight at once.
    const bursts = await Promise.all([0, 1, 2].map((i) => send(i, { op: "burst", store, checks: check, count: 10 })));
    assert.equal(bursts.reduce((sum, b) => sum + b.admitted, 0), 5);

    // The window turned (a throttling rule would admit 5 more): every isolate is told the block's end.
    await setClock(send, object, exceeded + 60_000);
    for (const isolate of [0, 1, 2]) {
      const { outcome } = await send(isolate, { op: "decide", store, checks: check });
      assert.deepEqual([outcome.allowed, outcome.store, outcome.retryAfterMs], [false, "durable", BLOCK_MS - 60_000]);
    }
    // The block is stored, not only in the object's memory.
    await assert.rejects(send(0, { op: "object", name: object, method: "restart" }));
    await setClock(send, object, exceeded + BLOCK_MS - 1);
    const lastMs = (await send(1, { op: "decide", store, checks: check })).outcome;
    assert.deepEqual([lastMs.allowed, lastMs.retryAfterMs], [false, 1]);
    // At its end, a full quota: exactly 5 again, across the isolates.
    await setClock(send, object, exceeded + BLOCK_MS);
    const again = await Promise.all([0, 1, 2].map((i) => send(i, { op: "burst", store, checks: check, count: 4 })));
    assert.equal(again.reduce((sum, b) => sum + b.admitted, 0), 5);
  });

  test("while the object is down, the KV fallback decides a blocking rule by throttling, counted as a fallback", async () => {
    const { send } = stores;
    const name = "block-down";
    await send(0, { op: "object", name: `${name}/1/0`, method: "setKnob", args: ["fault", "throw"] });
    const store = {
      kind: "chain",
      primary: { kind: "durable", options: { name } },
      kv: { kind: "kv", options: { prefix: `${name}:` } },
      memory: { kind: "memory" },
      options: { timeoutMs: 2000, breaker: false },
    };
    const check = [{ rule: blocking({ name, limit: 2, windowMs: 60_000 }), key: "k", cost: 1 }];
    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push((await send(0, { op: "decide", store, checks: check, nowMs: T0 + 1_000 })).outcome);
    assert.deepEqual(outcomes.map((o) => [o.allowed, o.store]), [[true, "kv"], [true, "kv"], [false, "kv"]]);
    assert.ok(outcomes.every((o) => o.fallback?.from === "durable"));
    // Throttled, not blocked: KV says when the window ends, not the block's end.
    assert.ok(outcomes[2].retryAfterMs <= 60_000, `retryAfterMs ${outcomes[2].retryAfterMs}`);
    await send(0, { op: "object", name: `${name}/1/0`, method: "setKnob", args: ["fault", null] });
  });

  test("a leased durable store never leases a blocking rule: every request is decided by the object", async () => {
    const { send } = stores;
    const burstsOf = async (name, r) => {
      const store = { kind: "leased", durable: { kind: "durable", options: { name } }, options: {} };
      await setClock(send, `${name}/1/0`, T0);
      const check = [{ rule: r, key: "hot", cost: 1 }];
      const bursts = [];
      for (let round = 0; round < 5; round++) {
        bursts.push(...(await Promise.all([0, 1, 2].map((i) => send(i, { op: "burst", store, checks: check, count: 20, nowMs: 1_000 + round })))));
      }
      const last = (await send(2, { op: "decide", store, checks: check, nowMs: 1_010 })).outcome;
      return { admitted: bursts.reduce((sum, b) => sum + b.admitted, 0), leased: bursts.reduce((sum, b) => sum + b.leased, 0), last };
    };
    // The same hot key on a throttling rule is leased (so the blocking rule's 0 is the rule's doing).
    const throttled = await burstsOf("throttle-lease", rule({ name: "throttle-lease", limit: 200, windowMs: 60_000 }));
    assert.ok(throttled.leased > 0, `a throttling rule's hot key was leased ${throttled.leased} times`);
    const blocked = await burstsOf("block-lease", blocking({ name: "block-lease", limit: 200, windowMs: 60_000 }));
    assert.equal(blocked.leased, 0);
    assert.equal(blocked.admitted, 200);
    assert.deepEqual([blocked.last.allowed, blocked.last.retryAfterMs], [false, BLOCK_MS]);
  });
});
