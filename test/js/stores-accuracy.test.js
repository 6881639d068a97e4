// Accuracy, measured: several isolates (Miniflare workers, each its own globalThis) share one Durable
// Object namespace and one KV namespace; a burst spread over them shows how many requests each store
// admits against one limit. The table it prints is the one in README.md, "Stores".
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { T0, rule, startStores } from "./fixtures/stores/harness.js";

const ISOLATES = 4;
const LIMIT = 10;
const REQUESTS = 60; // 15 per isolate: more than the limit on each
const HOUR = 3_600_000;

describe("accuracy across isolates", () => {
  let stores;
  const table = [];
  before(async () => {
    stores = await startStores({ isolates: ISOLATES });
  });
  after(async () => {
    await stores.dispose();
    const lines = [
      `${REQUESTS} requests over ${ISOLATES} isolates, limit ${LIMIT}:`,
      "| store | traffic | admitted | bound |",
      "|---|---|---|---|",
      ...table.map((row) => `| ${row.store} | ${row.traffic} | ${row.admitted} | ${row.bound} |`),
    ];
    console.log(lines.join("\n"));
  });

  const checkFor = (name) => [{ rule: rule({ name, limit: LIMIT, windowMs: HOUR }), key: "client", cost: 1 }];

  // Sends the requests at once, round-robin over the isolates; returns how many were admitted.
  async function burst(store, name, nowMs) {
    const outcomes = await Promise.all(
      Array.from({ length: REQUESTS }, (_, i) => stores.send(i % ISOLATES, { op: "decide", store, checks: checkFor(name), nowMs })),
    );
    return outcomes.filter((r) => r.outcome.allowed).length;
  }

  // Sends the requests one after another, `stepMs` apart, letting each isolate's KV writes finish.
  async function paced(store, name, stepMs) {
    let admitted = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const result = await stores.send(i % ISOLATES, { op: "decide", store, checks: checkFor(name), nowMs: T0 + i * stepMs, settle: true });
      if (result.outcome.allowed) admitted++;
    }
    return admitted;
  }

  test("durable: exactly the limit, however the burst is spread", async () => {
    await stores.send(0, { op: "object", name: "accuracy/1/0", method: "setKnob", args: ["clock", T0] });
    const admitted = await burst({ kind: "durable", options: { name: "accuracy" } }, "acc-durable", T0);
    table.push({ store: "durable", traffic: "burst, all at once", admitted, bound: `exactly ${LIMIT}` });
    assert.equal(admitted, LIMIT);
  });

  test("memory: each isolate counts alone, up to isolates x limit", async () => {
    const admitted = await burst({ kind: "memory" }, "acc-memory", T0);
    table.push({ store: "memory", traffic: "burst, all at once", admitted, bound: `up to ${ISOLATES} x ${LIMIT}` });
    // Every isolate received more than the limit, so each admitted exactly the limit.
    assert.equal(admitted, ISOLATES * LIMIT);
  });

  test("kv: a burst inside one read interval over-admits, at most isolates x limit", async () => {
    const admitted = await burst({ kind: "kv", options: { prefix: "acc-burst:" } }, "acc-kv-burst", T0);
    table.push({ store: "kv", traffic: "burst, all at once", admitted, bound: `${LIMIT} to ${ISOLATES} x ${LIMIT}` });
    assert.ok(admitted >= LIMIT && admitted <= ISOLATES * LIMIT, `admitted ${admitted}`);
  });

  for (const stepMs of [1000, 100, 10]) {
    test(`kv: requests ${stepMs} ms apart (read and flush interval 1000 ms)`, async () => {
      const store = { kind: "kv", options: { prefix: `acc-paced-${stepMs}:` } };
      const admitted = await paced(store, `acc-kv-${stepMs}`, stepMs);
      table.push({ store: "kv", traffic: `one every ${stepMs} ms`, admitted, bound: `${LIMIT} to ${ISOLATES} x ${LIMIT}` });
      assert.ok(admitted >= LIMIT && admitted <= ISOLATES * LIMIT, `admitted ${admitted}`);
      // Views refreshed before every request, writes done: nothing to over-admit on.
      if (stepMs >= 1000) assert.equal(admitted, LIMIT);
    });
  }
});
