// The live table of overrides (worker/src/features/overrides/): an admin API writes it, behind a token,
// audited without the key itself; three isolates apply a change within refreshMs on their clocks (the
// stated bound), exactly, counted on one Durable Object.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { startWorkers } from "./helpers/worker.js";

const ISOLATES = 3;
const T0 = Date.UTC(2030, 0, 1);
const REFRESH_MS = 5000;
const TOKEN = "an-admin-token-of-at-least-32-characters-7f3a";

let mf;
const isolates = [];
before(async () => {
  const workers = [];
  for (let i = 0; i < ISOLATES; i++) {
    const name = `w${i}`;
    const home = (className) => (i === 0 ? { className, useSQLite: true } : { className, scriptName: "w0", useSQLite: true });
    workers.push({
      name,
      entry: "overrides",
      bindings: { ENV: "production", ADMIN_TOKEN: TOKEN },
      durableObjects: { SLUICE_DO: home("TestSluiceDurableObject"), SLUICE_OVERRIDES: home("SluiceOverridesObject") },
    });
  }
  mf = await startWorkers(workers);
  for (let i = 0; i < ISOLATES; i++) isolates.push(await mf.getWorker(`w${i}`));
  await isolates[0].fetch("http://ov.test/__test/object", { method: "POST", body: JSON.stringify({ name: "sluice/1/0", method: "setKnob", args: ["clock", T0] }) });
  await at(T0);
});
after(() => mf?.dispose());

async function at(now) {
  for (const isolate of isolates) assert.equal((await isolate.fetch("http://ov.test/__test/clock", { method: "POST", body: JSON.stringify({ now }) })).status, 200);
}

async function adminCall(method, body, token = TOKEN, on = 0) {
  const response = await isolates[on].fetch("http://ov.test/admin/overrides", {
    method,
    headers: { authorization: `Bearer ${token}`, "x-sluice-actor": "ops@example.test" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

async function admitted(key, n) {
  let count = 0;
  for (let i = 0; i < n; i++) {
    const response = await isolates[i % ISOLATES].fetch("http://ov.test/live-api", { headers: { "x-api-key": key } });
    if (response.status === 200) count++;
    await response.text();
  }
  return count;
}

test("a wrong or missing token changes nothing", async () => {
  assert.equal((await adminCall("PUT", { key: "key:mallory", limit: 1000 }, "wrong-token-of-at-least-32-characters-000")).status, 401);
  const bare = await isolates[1].fetch("http://ov.test/admin/overrides", { method: "PUT", body: JSON.stringify({ key: "key:mallory", limit: 1000 }) });
  assert.equal(bare.status, 401);
  await bare.text();
  assert.deepEqual((await adminCall("GET")).body, { version: 0, overrides: [] });
});

test("a change applies in every isolate once their copies are refreshMs old, not before, and counts exactly", async () => {
  // Every isolate fetches the (empty) table now: acme has the rule's own limit, 2.
  assert.equal(await admitted("acme", 6), 2);
  const put = await adminCall("PUT", { key: "key:acme", limit: 9 });
  assert.deepEqual(put, { status: 200, body: { version: 1 } });
  // 1 ms before the bound, every isolate still decides on its old copy.
  await at(T0 + REFRESH_MS - 1);
  assert.equal(await admitted("acme", 6), 0);
  // At the bound, all of them apply it: the override's own budget, exactly, across the isolates.
  await at(T0 + REFRESH_MS);
  assert.equal(await admitted("acme", 12), 9);
  for (const isolate of isolates) assert.equal((await (await isolate.fetch("http://ov.test/__test/live")).json()).version, 1);
});

test("a refused override names its field, and the audit keeps who and what without the key", async () => {
  const refused = await adminCall("PUT", { key: "key:globex", limit: 0 });
  assert.equal(refused.status, 400);
  assert.equal(refused.body.field, "limit");
  const removed = await adminCall("DELETE", { key: "key:acme" });
  assert.deepEqual(removed, { status: 200, body: { version: 2 } });
  const audit = await isolates[2].fetch("http://ov.test/__test/object", { method: "POST", body: JSON.stringify({ name: "overrides", method: "audit", binding: "SLUICE_OVERRIDES" }) });
  assert.equal(audit.status, 200);
  const entries = (await audit.json()).result;
  assert.deepEqual(entries.map((e) => [e.version, e.action, e.actor, e.kind]), [[2, "remove", "ops@example.test", "key"], [1, "put", "ops@example.test", "key"]]);
  assert.ok(entries.every((e) => /^[0-9a-f]{16}$/.test(e.fingerprint) && !JSON.stringify(e).includes("acme")));
});
