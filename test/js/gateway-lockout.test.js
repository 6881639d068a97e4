// The gateway's lockout rule end to end: the shipped configuration (gateway.config.json) in front of
// the demo upstream (its POST /auth/login: 200 for the password "correct horse battery staple", else
// 401), four isolates sharing one Durable Object whose clock the tests set. The rule reads the
// account from the JSON body and charges on the upstream's status.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ADMIN_TOKEN, UPSTREAM_TOKEN } from "./fixtures/gateway/harness.js";
import { parseExposition, sample } from "./helpers/prometheus.js";
import { startWorkers, storeBindings } from "./helpers/worker.js";

const ISOLATES = 4;
const T0 = Date.UTC(2030, 0, 1);
const MINUTE = 60_000;
const PASSWORD = "correct horse battery staple";
const OBJECT = "sluice/1/0";

let mf;
const isolates = [];

before(async () => {
  const workers = [];
  for (let i = 0; i < ISOLATES; i++) {
    const name = `g${i}`;
    workers.push({
      name,
      entry: "lockoutGateway",
      bindings: { ENV: "production", UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN },
      serviceBindings: { DEMO_UPSTREAM: { name, entrypoint: "DemoUpstream" } },
      ...storeBindings(name, "g0", "TestSluiceDurableObject"),
    });
  }
  mf = await startWorkers(workers);
  for (let i = 0; i < ISOLATES; i++) isolates.push(await mf.getWorker(`g${i}`));
  await setObjectClock(T0);
});
after(() => mf?.dispose());

// The object is reached through a second namespace binding of the same class: the gateway has no test routes.
async function setObjectClock(now) {
  const response = await mf.getDurableObjectNamespace("SLUICE_DO", "g0");
  const stub = response.get(response.idFromName(OBJECT));
  await stub.setKnob("clock", now);
}

function login(username, password, { ip, on = 0, body } = {}) {
  return isolates[on].fetch("http://demo/auth/login", {
    method: "POST",
    headers: { "content-type": "application/json", "cf-connecting-ip": ip },
    body: body ?? JSON.stringify({ username, password }),
  });
}

async function statusOf(promise) {
  const response = await promise;
  await response.arrayBuffer();
  return response.status;
}

async function snapshot(response) {
  return { status: response.status, body: await response.text(), headers: [...response.headers] };
}

describe("the demo's /auth/login through the gateway", () => {
  test("the 6th failure from one IP is refused whichever isolate serves it, the right password too", async () => {
    for (let i = 0; i < 5; i++) assert.equal(await statusOf(login("alice", "guess", { ip: "203.0.113.1", on: i % ISOLATES })), 401, `failure ${i + 1}`);
    for (let on = 0; on < ISOLATES; on++) {
      const response = await login("alice", PASSWORD, { ip: "203.0.113.1", on });
      assert.equal(response.status, 429, `isolate g${on}`);
      assert.equal(response.headers.get("retry-after"), "900");
      assert.deepEqual(await response.json(), { error: "too many failed attempts", code: "sluice_locked_out", retryAfter: 900 });
    }
    // The same account from another address: not locked, and the body reached the upstream intact.
    const other = await login("Alice ", PASSWORD, { ip: "203.0.113.2", on: 1 });
    assert.equal(other.status, 200);
    assert.deepEqual(await other.json(), { ok: true, action: "login" });
  });

  test("the lock ends after 15 minutes on the object's clock", async () => {
    for (let i = 0; i < 5; i++) await statusOf(login("bob", "guess", { ip: "203.0.113.3", on: i % ISOLATES }));
    await setObjectClock(T0 + 15 * MINUTE - 1);
    assert.equal(await statusOf(login("bob", PASSWORD, { ip: "203.0.113.3", on: 2 })), 429);
    await setObjectClock(T0 + 15 * MINUTE);
    assert.equal(await statusOf(login("bob", PASSWORD, { ip: "203.0.113.3", on: 3 })), 200);
    await setObjectClock(T0);
  });

  test("20 failures for one account from any IPs lock it from every IP; other accounts go on", async () => {
    for (let i = 0; i < 20; i++) {
      const ip = `192.0.2.${Math.floor(i / 4) + 10}`;
      assert.equal(await statusOf(login("carol", "guess", { ip, on: i % ISOLATES })), 401, `failure ${i + 1}`);
    }
    for (let on = 0; on < ISOLATES; on++) assert.equal(await statusOf(login("ｃarol", PASSWORD, { ip: `198.18.1.${on}`, on })), 429);
    assert.equal(await statusOf(login("dave", PASSWORD, { ip: "192.0.2.10" })), 200);
  });

  test("a locked existing account and a locked unknown one look the same: status, body, headers", async () => {
    // The demo's upstream knows every name; what matters is that the gateway's answer depends only on
    // the lock, so two names locked alike are answered alike.
    for (const name of ["erin", "nobody-by-this-name"]) {
      for (let i = 0; i < 5; i++) await statusOf(login(name, "guess", { ip: "203.0.113.60", on: i % ISOLATES }));
    }
    for (let on = 0; on < ISOLATES; on++) {
      const known = await snapshot(await login("erin", PASSWORD, { ip: "203.0.113.60", on }));
      const unknown = await snapshot(await login("nobody-by-this-name", PASSWORD, { ip: "203.0.113.60", on }));
      assert.equal(known.status, 429);
      assert.deepEqual(unknown, known, `isolate g${on}`);
    }
  });

  test("the 10 per minute per IP limit (in the isolate's memory) still counts every attempt", async () => {
    const statuses = [];
    for (let i = 0; i < 11; i++) statuses.push(await statusOf(login(`user-${i}`, PASSWORD, { ip: "203.0.113.70" })));
    assert.deepEqual(statuses, [...Array(10).fill(200), 429]);
  });

  test("a body naming no account, or naming it twice, is refused with 400 before the upstream", async () => {
    for (const body of ['{"password":"x"}', "username=alice", '{"username":["alice"]}']) {
      const response = await login(undefined, undefined, { ip: "203.0.113.80", body });
      assert.equal(response.status, 400, body);
      assert.equal((await response.json()).code, "sluice_missing_account");
    }
    // Twice: parsers disagree on which duplicate wins, so the upstream might check the other one.
    const response = await login(undefined, undefined, { ip: "203.0.113.80", body: '{"username":"decoy","username":"alice","password":"x"}' });
    assert.equal(response.status, 400);
    assert.equal((await response.json()).code, "sluice_ambiguous_account");
  });

  test("the metrics count the lockout rule's admissions and denials", async () => {
    for (let i = 0; i < 6; i++) await statusOf(login("frank", "guess", { ip: "203.0.113.90" }));
    const response = await isolates[0].fetch("http://demo/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const families = parseExposition(await response.text());
    const labels = { route: "/auth/login", rule: "login-lockout", mode: "enforce" };
    assert.ok(sample(families, "sluice_rule_denied_total", labels) >= 1);
    assert.ok(sample(families, "sluice_rule_admitted_total", labels) >= 5);
    assert.equal(sample(families, "sluice_rule_bypassed_total", labels), 0);
  });
});
