// Counting on the response on the Durable Object across three isolates (the fixture Worker
// test/js/fixtures/response-count/worker.js): failed logins, wherever they land, are counted exactly once
// each, successes never, and every isolate refuses the key once its failures are spent.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { startIsolatesOnOneObject } from "./helpers/worker.js";

const ISOLATES = 3;
const T0 = Date.UTC(2030, 0, 1);
const OBJECT = "sluice/1/0";

let mf;
let isolates = [];
before(async () => {
  ({ mf, isolates } = await startIsolatesOnOneObject(ISOLATES, "responseCount"));
  const knob = await isolates[0].fetch("http://rc.test/__test/object", { method: "POST", body: JSON.stringify({ name: OBJECT, method: "setKnob", args: ["clock", T0] }) });
  assert.equal(knob.status, 200);
  for (const isolate of isolates) await isolate.fetch("http://rc.test/__test/clock", { method: "POST", body: JSON.stringify({ now: T0 }) });
});
after(() => mf?.dispose());

const login = (on, ip, password) =>
  isolates[on].fetch("http://rc.test/login", { method: "POST", headers: { "cf-connecting-ip": ip, "x-password": password } });

async function runs() {
  let total = 0;
  for (const isolate of isolates) total += (await (await isolate.fetch("http://rc.test/__test/runs")).json()).runs;
  return total;
}

test("three isolates count failed responses exactly, successes not at all, and all refuse once the failures are spent", async () => {
  const ip = "203.0.113.50";
  // Successes from every isolate spend nothing.
  for (let i = 0; i < 6; i++) assert.equal((await login(i % ISOLATES, ip, "right")).status, 200);
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await login(i % ISOLATES, ip, "guess")).status);
  assert.deepEqual(statuses, [401, 401, 401]);
  const runsBefore = await runs();
  for (let on = 0; on < ISOLATES; on++) {
    const refused = await login(on, ip, "right");
    assert.equal(refused.status, 429, `isolate w${on}`);
    await refused.text();
  }
  assert.equal(await runs(), runsBefore, "no refused request reached the handler");
  assert.equal((await login(1, "203.0.113.51", "guess")).status, 401, "another client has its own count");
});

test("three isolates charge the costs the origin reported, exactly, into one budget", async () => {
  const query = (on, cost) => isolates[on].fetch("http://rc.test/query", { headers: { "cf-connecting-ip": "198.51.100.60", "x-test-cost": cost } });
  const remaining = [];
  for (const [on, cost] of [[0, "30"], [1, "30"], [2, "30"], [0, "20"]]) {
    const response = await query(on, cost);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-sluice-cost"), null);
    remaining.push(Number(response.headers.get("x-ratelimit-remaining")));
    await response.text();
  }
  // 20 with 10 left drains the key (it cannot go below 0); then every isolate refuses it.
  assert.deepEqual(remaining, [70, 40, 10, 0]);
  for (let on = 0; on < ISOLATES; on++) {
    const refused = await query(on, "1");
    assert.equal(refused.status, 429, `isolate w${on}`);
    await refused.text();
  }
});
