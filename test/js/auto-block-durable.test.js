// Auto-blocking on the Durable Object across three isolates (the fixture Worker
// test/js/fixtures/auto-block/worker.js): the strikes and the block are the object's, so requests
// from any isolate count toward one block, which every isolate then enforces for its whole length.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { startIsolatesOnOneObject } from "./helpers/worker.js";

const ISOLATES = 3;
const T0 = Date.UTC(2030, 0, 1);
const OBJECT = "sluice/1/0";

let mf;
let isolates = [];
before(async () => {
  ({ mf, isolates } = await startIsolatesOnOneObject(ISOLATES, "autoBlock"));
  await setClock(T0);
});
after(() => mf?.dispose());

async function setClock(now) {
  const knob = await isolates[0].fetch("http://ab.test/__test/object", { method: "POST", body: JSON.stringify({ name: OBJECT, method: "setKnob", args: ["clock", now] }) });
  assert.equal(knob.status, 200);
  for (const isolate of isolates) await isolate.fetch("http://ab.test/__test/clock", { method: "POST", body: JSON.stringify({ now }) });
}

async function login(on, address) {
  const response = await isolates[on].fetch("http://ab.test/login", { method: "POST", headers: { "cf-connecting-ip": address } });
  await response.text();
  return [response.status, response.headers.get("retry-after")];
}

async function countersSum() {
  const sum = { strikes: 0, blocksStarted: 0, refusedWhileBlocked: 0 };
  for (const isolate of isolates) {
    const counters = await (await isolate.fetch("http://ab.test/__test/counters")).json();
    for (const name of Object.keys(sum)) sum[name] += counters[name];
  }
  return sum;
}

test("three isolates count one client's refusals exactly toward one block, which every isolate enforces to its end", async () => {
  const client = "203.0.113.70";
  const statuses = [];
  // 4 admitted, then 6 refusals (the strikes), round robin over the isolates.
  for (let i = 0; i < 10; i++) statuses.push((await login(i % ISOLATES, client))[0]);
  assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429, 429, 429, 429, 429]);
  // The 7th refusal is the block, started by whichever isolate serves it.
  assert.deepEqual(await login(1, client), [429, "300"]);
  // A minute later the rule's window has turned 6 times: every isolate still refuses, to the block's end.
  await setClock(T0 + 60_000);
  for (let on = 0; on < ISOLATES; on++) assert.deepEqual(await login(on, client), [429, "240"], `isolate w${on}`);
  assert.deepEqual(await countersSum(), { strikes: 6, blocksStarted: 1, refusedWhileBlocked: 4 });
  await setClock(T0 + 300_000);
  assert.deepEqual(await login(2, client), [200, null]);
});

test("a burst from three isolates at once admits exactly the limit, and its refusals block the client everywhere", async () => {
  const client = "198.51.100.71";
  await setClock(T0 + 400_000);
  const burst = await Promise.all(Array.from({ length: 30 }, (_, i) => login(i % ISOLATES, client)));
  assert.equal(burst.filter(([status]) => status === 200).length, 4);
  // 26 refusals: far past 6 strikes. The window turns; the client stays refused in every isolate.
  await setClock(T0 + 420_000);
  for (let on = 0; on < ISOLATES; on++) {
    const [status, retryAfter] = await login(on, client);
    assert.equal(status, 429, `isolate w${on}`);
    assert.equal(retryAfter, "280", `isolate w${on}`);
  }
});

async function listed(on) {
  const response = await isolates[on].fetch("http://ab.test/__test/blocks");
  assert.equal(response.status, 200);
  return response.json();
}

test("a block one isolate started is listed by every isolate (the object's list), and a lift in another takes it off every list", async () => {
  const client = "192.0.2.72";
  await setClock(T0 + 800_000); // past the earlier tests' blocks
  // Only isolate w0 serves the client: 4 admitted, 6 strikes, then the block.
  for (let i = 0; i < 10; i++) await login(0, client);
  assert.deepEqual(await login(0, client), [429, "300"]);
  const block = { rule: "login", key: `ip:${client}`, untilMs: T0 + 800_000 + 300_000 };
  // w1 and w2 never saw the client: they list the block all the same, from the object.
  for (let on = 0; on < ISOLATES; on++) assert.deepEqual(await listed(on), [block], `isolate w${on}`);
  // w2 lifts it: no isolate lists it any more, and w2 admits the client again. (w0 remembers its own
  // denial until its retry time: the chain's pre-filter, docs/stores.md.)
  const lift = await isolates[2].fetch("http://ab.test/__test/lift", { method: "POST", body: JSON.stringify({ rule: "login", key: `ip:${client}` }) });
  assert.deepEqual(await lift.json(), { lifted: true });
  for (let on = 0; on < ISOLATES; on++) assert.deepEqual(await listed(on), [], `isolate w${on} after the lift`);
  await setClock(T0 + 900_000);
  assert.deepEqual(await login(2, client), [200, null]);
  // A block ends off every list when its time is up.
  for (let i = 0; i < 11; i++) await login(1, client);
  assert.equal((await listed(2)).length, 1);
  await setClock(T0 + 900_000 + 300_000);
  for (let on = 0; on < ISOLATES; on++) assert.deepEqual(await listed(on), [], `isolate w${on} after the block's end`);
});
