// Account lockout (worker/src/features/lockout/lockout.js) in workerd: the Hono middleware and createLockout, on the
// Durable Object across four isolates and on the isolate's memory, at fixed instants.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { startIsolatesOnOneObject } from "./helpers/worker.js";

const ISOLATES = 4;
const T0 = Date.UTC(2030, 0, 1);
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const PASSWORD = "correct horse battery staple";
// The Durable Object the default store counts in (createDurableStore: name "sluice", 1 shard).
const OBJECT = "sluice/1/0";

let mf;
let isolates = [];

before(async () => {
  ({ mf, isolates } = await startIsolatesOnOneObject(ISOLATES, "lockout"));
  await objectCall("setKnob", "clock", T0);
  await at(T0);
});
after(() => mf?.dispose());

async function objectCall(method, ...args) {
  const response = await isolates[0].fetch("http://lockout.test/__test/object", {
    method: "POST",
    body: JSON.stringify({ name: OBJECT, method, args }),
  });
  assert.equal(response.status, 200);
  return (await response.json()).result;
}

/** Sets every isolate's clock. */
async function at(now) {
  for (const isolate of isolates) {
    const response = await isolate.fetch("http://lockout.test/__test/clock", { method: "POST", body: JSON.stringify({ now }) });
    assert.equal(response.status, 200);
  }
}

/** One login attempt at `path` served by isolate `on`, from `ip`. */
function attempt(path, username, password, { ip = "198.51.100.7", on = 0 } = {}) {
  return isolates[on].fetch(`http://lockout.test${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "cf-connecting-ip": ip },
    body: JSON.stringify({ username, password }),
  });
}

async function handlerRuns(on = 0) {
  return (await (await isolates[on].fetch("http://lockout.test/__test/runs")).json()).runs;
}

async function statusOf(responsePromise) {
  const response = await responsePromise;
  await response.arrayBuffer();
  return response.status;
}

/** A response as a comparable record: status, body and every header. */
async function snapshot(response) {
  return { status: response.status, body: await response.text(), headers: [...response.headers] };
}

describe("on the Durable Object, across four isolates", () => {
  test("the 6th failure from one IP is refused whichever isolate serves it", async () => {
    for (let i = 0; i < 5; i++) {
      assert.equal(await statusOf(attempt("/durable/login", "carol", "guess", { on: i % ISOLATES, ip: "203.0.113.1" })), 401, `failure ${i + 1}`);
    }
    for (let on = 0; on < ISOLATES; on++) {
      const response = await attempt("/durable/login", "carol", "guess", { on, ip: "203.0.113.1" });
      assert.equal(response.status, 429, `isolate w${on}`);
      assert.equal(response.headers.get("retry-after"), String(15 * 60));
      assert.deepEqual(await response.json(), { error: "too many failed attempts", code: "locked_out", retryAfter: 15 * 60 });
    }
    // Another address is not locked out of the account (its threshold is per account and address).
    assert.equal(await statusOf(attempt("/durable/login", "carol", "guess", { on: 3, ip: "203.0.113.2" })), 401);
  });

  test("a locked attempt with the right password is refused, and the handler does not run", async () => {
    for (let i = 0; i < 5; i++) await statusOf(attempt("/durable/login", "alice", "wrong", { on: i % ISOLATES, ip: "203.0.113.9" }));
    const runs = await Promise.all(isolates.map((_, on) => handlerRuns(on)));
    for (let on = 0; on < ISOLATES; on++) {
      assert.equal(await statusOf(attempt("/durable/login", "alice", PASSWORD, { on, ip: "203.0.113.9" })), 429, `isolate w${on}`);
    }
    assert.deepEqual(await Promise.all(isolates.map((_, on) => handlerRuns(on))), runs);
    // The lock lasts its 15 minutes on the object's clock, and then the right password works.
    // (The isolates' clocks move too: each remembers the object's denials until their retry time.)
    await objectCall("setKnob", "clock", T0 + 15 * MINUTE - 1);
    await at(T0 + 15 * MINUTE - 1);
    assert.equal(await statusOf(attempt("/durable/login", "alice", PASSWORD, { on: 2, ip: "203.0.113.9" })), 429);
    await objectCall("setKnob", "clock", T0 + 15 * MINUTE);
    await at(T0 + 15 * MINUTE);
    assert.equal(await statusOf(attempt("/durable/login", "alice", PASSWORD, { on: 2, ip: "203.0.113.9" })), 200);
    await objectCall("setKnob", "clock", T0);
    await at(T0);
  });

  test("20 failures for one account from many addresses lock the account for every address", async () => {
    for (let i = 0; i < 20; i++) {
      // Four attempts per address: no (account, address) pair reaches its own 5.
      const ip = `192.0.2.${Math.floor(i / 4) + 1}`;
      assert.equal(await statusOf(attempt("/durable/login", "dave", "guess", { on: i % ISOLATES, ip })), 401, `failure ${i + 1}`);
    }
    for (let on = 0; on < ISOLATES; on++) {
      assert.equal(await statusOf(attempt("/durable/login", "dave", PASSWORD, { on, ip: `198.18.0.${on + 1}` })), 429, `fresh address on w${on}`);
    }
    // Other accounts are untouched.
    assert.equal(await statusOf(attempt("/durable/login", "bob", PASSWORD, { ip: "192.0.2.1" })), 200);
  });

  test("a locked account that exists and one that does not get the same status, body and headers", async () => {
    for (const name of ["bob", "nobody-here"]) {
      for (let i = 0; i < 5; i++) assert.equal(await statusOf(attempt("/durable/login", name, "guess", { on: i % ISOLATES, ip: "203.0.113.50" })), 401);
    }
    for (let on = 0; on < ISOLATES; on++) {
      const existing = await snapshot(await attempt("/durable/login", "bob", "guess", { on, ip: "203.0.113.50" }));
      const missing = await snapshot(await attempt("/durable/login", "nobody-here", "guess", { on, ip: "203.0.113.50" }));
      assert.equal(existing.status, 429);
      assert.deepEqual(missing, existing, `isolate w${on}`);
    }
  });

  test("with no fallback, a failing Durable Object fails closed: attempts are refused, none reaches the handler", async () => {
    await objectCall("setKnob", "fault", "throw");
    try {
      const runs = await handlerRuns(1);
      const response = await attempt("/durable-strict/login", "bob", PASSWORD, { on: 1, ip: "198.51.100.99" });
      assert.equal(response.status, 429);
      assert.equal(response.headers.get("retry-after"), "1");
      assert.equal(await handlerRuns(1), runs);
    } finally {
      await objectCall("setKnob", "fault", null);
    }
    assert.equal(await statusOf(attempt("/durable-strict/login", "bob", PASSWORD, { on: 1, ip: "198.51.100.99" })), 200);
  });
});

describe("on the isolate's memory, at fixed instants", () => {
  test("Alice, 'alice ' and the fullwidth 'ａlice' are one account", async () => {
    await at(T0);
    const spellings = ["Alice", "alice ", "ａlice", " ALICE", "alice"];
    for (const name of spellings) assert.equal(await statusOf(attempt("/memory/login", name, "guess", { ip: "198.51.100.1" })), 401, name);
    assert.equal(await statusOf(attempt("/memory/login", "aLiCe", PASSWORD, { ip: "198.51.100.1" })), 429);
    // With normalize: false each spelling is its own account.
    for (const name of spellings) assert.equal(await statusOf(attempt("/memory-exact/login", name, "guess", { ip: "198.51.100.1" })), 401, name);
    assert.equal(await statusOf(attempt("/memory-exact/login", "alice", PASSWORD, { ip: "198.51.100.1" })), 200);
  });

  test("a success clears the failures; with resetOnSuccess false it does not", async () => {
    await at(T0);
    for (const path of ["/memory/login", "/memory-keep/login"]) {
      for (let i = 0; i < 4; i++) assert.equal(await statusOf(attempt(path, "bob", "guess", { ip: "198.51.100.2" })), 401);
      assert.equal(await statusOf(attempt(path, "bob", PASSWORD, { ip: "198.51.100.2" })), 200);
    }
    // Cleared: four more failures are allowed before the fifth locks.
    for (let i = 0; i < 4; i++) assert.equal(await statusOf(attempt("/memory/login", "bob", "guess", { ip: "198.51.100.2" })), 401);
    assert.equal(await statusOf(attempt("/memory/login", "bob", PASSWORD, { ip: "198.51.100.2" })), 200);
    // Kept: the fifth failure in the window locks.
    assert.equal(await statusOf(attempt("/memory-keep/login", "bob", "guess", { ip: "198.51.100.2" })), 401);
    assert.equal(await statusOf(attempt("/memory-keep/login", "bob", PASSWORD, { ip: "198.51.100.2" })), 429);
  });

  test("failures age out of the window", async () => {
    await at(T0);
    for (let i = 0; i < 4; i++) assert.equal(await statusOf(attempt("/memory/login", "frank", "guess", { ip: "198.51.100.3" })), 401);
    await at(T0 + 15 * MINUTE);
    assert.equal(await statusOf(attempt("/memory/login", "frank", "guess", { ip: "198.51.100.3" })), 401);
    assert.equal(await statusOf(attempt("/memory/login", "frank", "guess", { ip: "198.51.100.3" })), 401);
  });

  test("backoff: each lockout within the backoff window locks twice as long, up to maxLockSec", async () => {
    let now = T0 + 10 * MINUTE;
    const lengths = [];
    for (let lockout = 0; lockout < 4; lockout++) {
      await at(now);
      for (let i = 0; i < 2; i++) assert.equal(await statusOf(attempt("/memory-backoff/login", "grace", "guess")), 401);
      const locked = await attempt("/memory-backoff/login", "grace", PASSWORD);
      assert.equal(locked.status, 429);
      const seconds = Number(locked.headers.get("retry-after"));
      await locked.arrayBuffer();
      lengths.push(seconds);
      // Still locked a millisecond before it ends; free at its end.
      await at(now + seconds * SECOND - 1);
      assert.equal(await statusOf(attempt("/memory-backoff/login", "grace", "guess")), 429);
      now += seconds * SECOND;
    }
    assert.deepEqual(lengths, [10, 20, 40, 40]);
    // A success clears the lockouts as well: the next lock is the first length again.
    await at(now);
    assert.equal(await statusOf(attempt("/memory-backoff/login", "grace", PASSWORD)), 200);
    for (let i = 0; i < 2; i++) await statusOf(attempt("/memory-backoff/login", "grace", "guess"));
    const again = await attempt("/memory-backoff/login", "grace", PASSWORD);
    assert.equal(again.headers.get("retry-after"), "10");
    await again.arrayBuffer();
  });

  test("the handler's explicit fail() and succeed() decide, whatever the status", async () => {
    await at(T0);
    for (let i = 0; i < 5; i++) assert.equal(await statusOf(attempt("/memory-explicit/login", "heidi", "guess")), 200);
    assert.equal(await statusOf(attempt("/memory-explicit/login", "heidi", PASSWORD)), 429);
  });

  test("failureStatuses decides which statuses are failures", async () => {
    await at(T0);
    for (let i = 0; i < 5; i++) assert.equal(await statusOf(attempt("/memory-statuses/login", "ivan", "guess")), 422);
    assert.equal(await statusOf(attempt("/memory-statuses/login", "ivan", PASSWORD)), 429);
    // A 401 is not one of them here: never counted.
    for (let i = 0; i < 8; i++) assert.equal(await statusOf(attempt("/memory/login", `judy-${i}`, "guess")), 401);
  });

  test("a request naming no account, or naming it twice, is refused with 400 and never reaches the handler", async () => {
    const runs = await handlerRuns();
    for (const body of ['{"password":"x"}', '{"username":""}', '{"username":42}', "not json", '["alice"]', '{"username":"   "}', '{"username":"decoy","username":"alice"}', '{"user\\u006eame":"decoy","username":"alice"}']) {
      const response = await isolates[0].fetch("http://lockout.test/memory/login", { method: "POST", headers: { "cf-connecting-ip": "198.51.100.4" }, body });
      assert.equal(response.status, 400, body.slice(0, 30));
      assert.equal((await response.json()).code, "missing_account");
    }
    assert.equal(await handlerRuns(), runs);
  });

  test("jsonField reads at most 16 KiB of a copy of the body, whether or not its length is declared", async () => {
    for (const declared of [true, false]) {
      const field = async (length) => (await isolates[0].fetch("http://lockout.test/__test/field", { method: "POST", body: JSON.stringify({ length, declared }) })).json();
      assert.deepEqual(await field(16 * 1024), { bodyLength: 16 * 1024, value: 16 * 1024 - 15, stillReadable: 16 * 1024 });
      assert.deepEqual(await field(16 * 1024 + 1), { bodyLength: 16 * 1024 + 1, value: null, stillReadable: 16 * 1024 + 1 });
    }
  });

  test("a reset that fails is counted, not thrown into the response, and the lock still holds", async () => {
    await at(T0);
    const first = await attempt("/unclearable/login", "bob", PASSWORD);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get("x-test-reset-failures"), "1", "the success's reset failed");
    await first.arrayBuffer();
    await statusOf(attempt("/unclearable/login", "bob", "guess"));
    const second = await attempt("/unclearable/login", "bob", "guess");
    assert.equal(second.status, 401);
    assert.equal(second.headers.get("x-test-reset-failures"), "2", "the lock's reset of the failures failed");
    await second.arrayBuffer();
    assert.equal(await statusOf(attempt("/unclearable/login", "bob", PASSWORD)), 429);
    // After the 60 s lock, the uncleared failures keep the account refused until they leave their window.
    await at(T0 + MINUTE);
    assert.equal(await statusOf(attempt("/unclearable/login", "bob", PASSWORD)), 429);
    await at(T0 + 15 * MINUTE);
    assert.equal(await statusOf(attempt("/unclearable/login", "bob", PASSWORD)), 200);
  });

  test("createLockout guards a plain fetch handler the same way", async () => {
    await at(T0);
    for (let i = 0; i < 4; i++) {
      const response = await attempt("/plain/login", "mallory", "guess");
      assert.equal(response.status, 401);
      assert.deepEqual(JSON.parse(response.headers.get("x-test-settled")), { outcome: "failure", locked: [], counted: true });
      await response.arrayBuffer();
    }
    const fifth = await attempt("/plain/login", "mallory", "guess");
    assert.deepEqual(JSON.parse(fifth.headers.get("x-test-settled")), { outcome: "failure", locked: ["client"], counted: true });
    await fifth.arrayBuffer();
    const locked = await attempt("/plain/login", "mallory", PASSWORD);
    assert.equal(locked.status, 429);
    assert.equal(locked.headers.get("retry-after"), String(15 * 60));
    await locked.arrayBuffer();
  });
});

describe("configuration", () => {
  const cases = [
    [{ maxFailures: 0 }, "maxFailures"],
    [{ windowSec: -1 }, "windowSec"],
    [{ lockSec: "900" }, "lockSec"],
    [{ account: { maxFailures: 2 } }, "account.maxFailures"],
    [{ account: { lockSec: 0 } }, "account.lockSec"],
    [{ account: { limit: 3 } }, "account.limit"],
    [{ client: false, account: { maxFailures: 30 } }, "account"],
    [{ backoff: { factor: 1 } }, "backoff.factor"],
    [{ backoff: { maxLockSec: 900 * 2 ** 20 } }, "backoff.maxLockSec"],
    [{ failureStatuses: [200] }, "failureStatuses[0]"],
    [{ resetOnSuccess: "yes" }, "resetOnSuccess"],
    [{ normalize: "nfkc" }, "normalize"],
    [{ name: "a|b" }, "name"],
    [{ store: "kv" }, "store"],
    [{ fallback: ["kv", "memory"] }, "fallback[0]"],
    [{ failMode: "maybe" }, "failMode"],
    [{ maxfailures: 5 }, "maxfailures"],
  ];
  for (const [options, field] of cases) {
    test(`${JSON.stringify(options)} is refused, naming ${field}`, async () => {
      const response = await isolates[0].fetch("http://lockout.test/__test/config", { method: "POST", body: JSON.stringify(options) });
      assert.equal(response.status, 200);
      assert.equal((await response.json()).field, field);
    });
  }
  test("the defaults are valid", async () => {
    const response = await isolates[0].fetch("http://lockout.test/__test/config", { method: "POST", body: "{}" });
    assert.equal((await response.json()).field, null);
  });
});
