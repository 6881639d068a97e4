// The per-isolate instance in workerd (miniflare): shared by every request and middleware of an
// isolate, separate between isolates, and replaced, counted and kept serving when it fails.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { from, startWorkers } from "./helpers/worker.js";

const T0 = Date.UTC(2030, 0, 1);

let mf;
let other; // a second isolate running the same Worker

before(async () => {
  mf = await startWorkers([
    { name: "fixture", entry: "fixture", bindings: { ENV: "production" } },
    { name: "fixture-2", entry: "fixture", bindings: { ENV: "production" } },
  ]);
  other = await mf.getWorker("fixture-2");
  await mf.dispatchFetch("http://fixture/__test/clock", { method: "POST", body: JSON.stringify({ now: T0 }) });
  await other.fetch("http://fixture/__test/clock", { method: "POST", body: JSON.stringify({ now: T0 }) });
});
after(() => mf.dispose());

const remaining = (response) => response.headers.get("x-ratelimit-remaining");
const stats = async () => (await mf.dispatchFetch("http://fixture/__test/stats")).json();
const post = (path) => mf.dispatchFetch(`http://fixture${path}`, { method: "POST" });

test("every request and every middleware of an isolate share one instance and its counters", async () => {
  const ip = "192.0.2.200";
  const seen = [];
  for (const path of ["/shared/a", "/shared/b", "/shared/a", "/shared/b", "/shared/a"]) {
    const response = await mf.dispatchFetch(`http://fixture${path}`, from(ip));
    seen.push([response.status, remaining(response)]);
  }
  assert.deepEqual(seen, [[200, "3"], [200, "2"], [200, "1"], [200, "0"], [429, "0"]], "two middlewares, one rule, one count");

  const s = await stats();
  assert.equal(s.instancesCreated, 1);
  assert.equal(s.replacements, 0);
  assert.equal(s.decisions, 5);
  assert.equal(s.denied, 1);
  const shared = s.rules.filter((rule) => rule.id.startsWith("shared|"));
  assert.equal(shared.length, 1, "the rule is registered once");
  assert.equal(shared[0].keys, 1);
});

test("another isolate keeps its own counters", async () => {
  const response = await other.fetch("http://fixture/shared/a", from("192.0.2.200"));
  assert.equal(response.status, 200);
  assert.equal(remaining(response), "3");
});

test("a trapped instance is replaced and counted, and the request is still served", async () => {
  const ip = "192.0.2.201";
  assert.equal(remaining(await mf.dispatchFetch("http://fixture/keys/ip", from(ip))), "2");
  assert.equal(remaining(await mf.dispatchFetch("http://fixture/keys/ip", from(ip))), "1");

  assert.equal((await post("/__test/trap")).status, 200);
  const served = await mf.dispatchFetch("http://fixture/keys/ip", from(ip));
  assert.equal(served.status, 200);
  assert.equal(remaining(served), "2", "a fresh instance: the failed one's counters are gone");

  const s = await stats();
  assert.equal(s.instancesCreated, 2);
  assert.equal(s.instanceFailures, 1);
  assert.equal(s.replacements, 1);
  assert.match(s.lastFailure, /RuntimeError: unreachable/);
  assert.deepEqual(s.rules.map((rule) => rule.id), ["keys-ip|fixed-window|3|60000|0"], "rules are registered again as requests need them");

  assert.equal(remaining(await mf.dispatchFetch("http://fixture/keys/ip", from(ip))), "1", "and it keeps counting");
});

test("a check the core refuses for want of memory keeps the instance and every counter", async () => {
  const ip = "192.0.2.203";
  assert.equal(remaining(await mf.dispatchFetch("http://fixture/keys/ip", from(ip))), "2");
  const before = await stats();
  assert.equal((await post("/__test/refuse")).status, 200);
  await mf.dispatchFetch("http://fixture/keys/ip", from(ip)); // the refused request (its status is the middleware's)
  const s = await stats();
  assert.equal(s.refusedChecks, before.refusedChecks + 1);
  assert.equal(s.replacements, before.replacements, "no instance thrown away");
  assert.equal(s.instanceFailures, before.instanceFailures);
  assert.equal(remaining(await mf.dispatchFetch("http://fixture/keys/ip", from(ip))), "1", "the count from before the refusal is still there");
});

test("an instance out of memory keeps serving its rules, and is replaced when it cannot take a new one", async () => {
  const ip = "192.0.2.202";
  assert.equal(remaining(await mf.dispatchFetch("http://fixture/keys/ip", from(ip))), "2");
  assert.equal((await post("/__test/exhaust")).status, 200);
  const before = await stats();
  assert.ok(before.memoryBytes > 60 * 1024 * 1024, `${before.memoryBytes}`);

  assert.equal(remaining(await mf.dispatchFetch("http://fixture/keys/ip", from(ip))), "1", "registered rules need no memory");
  assert.equal((await stats()).replacements, before.replacements);

  const late = await mf.dispatchFetch("http://fixture/late", from(ip));
  assert.equal(late.status, 200, "the new rule is served by a fresh instance");
  assert.equal(remaining(late), "1");
  const s = await stats();
  assert.equal(s.replacements, before.replacements + 1);
  assert.equal(s.instancesCreated, before.instancesCreated + 1);
  assert.match(s.lastFailure, /OUT_OF_MEMORY/);
  assert.ok(s.memoryBytes < 16 * 1024 * 1024, `${s.memoryBytes}`);
});
