// reset(checks, options) of every store (the store contract, worker/src/stores/store.js), and peek
// charging nothing, in workerd: two isolates share the Durable Object namespace and the KV namespace.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { T0, rule, startStores } from "./fixtures/stores/harness.js";

async function decide(send, isolate, store, checks, nowMs, extra = {}) {
  return (await send(isolate, { op: "decide", store, checks, nowMs, settle: true, ...extra })).outcome;
}

describe("reset and peek in every store", () => {
  let stores;
  before(async () => {
    stores = await startStores({ isolates: 2 });
  });
  after(() => stores.dispose());

  test("durable: peeks charge nothing; a reset from another isolate restores the full quota", async () => {
    const { send } = stores;
    const store = { kind: "durable", options: { name: "reset-durable" } };
    await send(0, { op: "object", name: "reset-durable/1/0", method: "setKnob", args: ["clock", T0] });
    const r = rule({ name: "reset-durable", limit: 2, windowMs: 60_000 });
    const checks = [{ rule: r, key: "user:1", cost: 1 }];
    const other = [{ rule: r, key: "user:2", cost: 1 }];
    for (let i = 0; i < 3; i++) assert.equal((await decide(send, i % 2, store, checks, T0, { peek: true })).remaining, 1, "peek");
    assert.deepEqual([(await decide(send, 0, store, checks, T0)).allowed, (await decide(send, 1, store, checks, T0)).allowed], [true, true]);
    assert.equal((await decide(send, 0, store, other, T0)).remaining, 1);
    assert.equal((await decide(send, 0, store, checks, T0)).allowed, false);
    await send(1, { op: "reset", store, checks, nowMs: T0 });
    assert.equal((await decide(send, 0, store, checks, T0)).remaining, 1, "user:1 is back to its full quota");
    assert.equal((await decide(send, 0, store, other, T0)).remaining, 0, "user:2 kept its count");
  });

  test("kv: a reset deletes the window's value and empties this isolate's view; peeks charge nothing", async () => {
    const { send } = stores;
    const store = { kind: "kv", options: { prefix: "reset-kv:", readIntervalMs: 0, flushIntervalMs: 0 } };
    const r = rule({ name: "reset-kv", limit: 3, windowMs: 60_000 });
    const checks = [{ rule: r, key: "ip:1", cost: 1 }];
    for (let i = 0; i < 3; i++) assert.equal((await decide(send, 0, store, checks, T0, { peek: true })).remaining, 2, "peek");
    for (let i = 0; i < 3; i++) await decide(send, 0, store, checks, T0);
    assert.equal((await decide(send, 1, store, checks, T0 + 1)).allowed, false, "the other isolate reads the count from KV");
    assert.equal((await send(0, { op: "kvList", prefix: "reset-kv:" })).length, 1);
    await send(0, { op: "reset", store, checks, nowMs: T0 + 2 });
    assert.deepEqual(await send(0, { op: "kvList", prefix: "reset-kv:" }), [], "the window's value is deleted");
    assert.equal((await decide(send, 0, store, checks, T0 + 3)).remaining, 2, "this isolate starts over");
    assert.equal((await decide(send, 1, store, checks, T0 + 4)).allowed, true, "the other isolate, reading KV again, admits");
  });

  test("chain: a reset reaches every store of the chain and the pre-filter's memory of denials", async () => {
    const { send } = stores;
    const store = {
      kind: "chain",
      options: { preFilter: true },
      primary: { kind: "durable", options: { name: "reset-chain" } },
      memory: { kind: "memory" },
    };
    await send(0, { op: "object", name: "reset-chain/1/0", method: "setKnob", args: ["clock", T0] });
    const r = rule({ name: "reset-chain", limit: 1, windowMs: 60_000 });
    const checks = [{ rule: r, key: "k", cost: 1 }];
    assert.equal((await decide(send, 0, store, checks, T0)).allowed, true);
    const denied = await decide(send, 0, store, checks, T0);
    assert.equal(denied.allowed, false);
    assert.equal((await decide(send, 0, store, checks, T0)).preFiltered, true, "the isolate now denies from its memory");
    await send(0, { op: "reset", store, checks, nowMs: T0 });
    const after = await decide(send, 0, store, checks, T0);
    assert.deepEqual([after.allowed, after.store, after.preFiltered], [true, "durable", undefined]);
  });
});
