// The concurrency limit across isolates, in workerd: four isolates share one Durable Object per key.
// Never more than max holders under concurrent open and close; a holder that vanishes frees its slot
// once its lease has run out on the object's (injected) clock; an open holder's heartbeat renews it;
// WebSocket upgrades hold a slot until the socket closes.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { startWorkers, storeBindings } from "./helpers/worker.js";

const ISOLATES = 4;
const T0 = 4_102_444_800_000; // 2100-01-01: an object clock far from the real one
let mf;
let workers;

before(async () => {
  const names = Array.from({ length: ISOLATES }, (_, i) => `w${i}`);
  mf = await startWorkers(names.map((name) => ({ name, entry: "concurrency", ...storeBindings(name, "w0", "TestSluiceDurableObject") })));
  workers = await Promise.all(names.map((name) => mf.getWorker(name)));
});
after(() => mf?.dispose());

const ruleOf = (name, max, leaseMs) => ({ id: `${name}|concurrency|${max}|${leaseMs}|0`, name, algorithm: "concurrency", limit: max, windowMs: leaseMs, burst: 0, keyCapacity: 10_000 });
const objectOf = (rule, key) => `sluice/concurrency/${rule.id}/${key}`;

async function call(isolate, path, body) {
  const response = await workers[isolate].fetch(`http://conn.test${path}`, { method: "POST", body: JSON.stringify(body) });
  return (await response.json()).result ?? (await Promise.resolve(null));
}
async function object(name, method, ...args) {
  const response = await workers[0].fetch("http://conn.test/__test/object", { method: "POST", body: JSON.stringify({ name, method, args }) });
  return (await response.json()).result;
}
const open = (isolate, path, user, id) => workers[isolate].fetch(`http://conn.test${path}?id=${id}`, { headers: { "x-user": user } });
async function end(isolate, id, response, fail = false) {
  await workers[isolate].fetch("http://conn.test/__test/end", { method: "POST", body: JSON.stringify({ id, fail }) });
  // Reading to the end is what finishes the response, and so what releases.
  await response.text().catch(() => {});
}

// Waits (without asserting on time) until `condition` holds, or fails after `attempts` tries.
async function eventually(condition, what, attempts = 200) {
  for (let i = 0; i < attempts; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`never happened: ${what}`);
}

test("exactly max of many concurrent opens across isolates, and never more under open and close", async () => {
  const MAX = 3;
  const openStreams = []; // { isolate, id, response } admitted and not yet ended
  let next = 0;
  const launch = async (count) => {
    const attempts = Array.from({ length: count }, () => {
      const id = `s${next++}`;
      const isolate = next % ISOLATES;
      return open(isolate, "/stream", "alice", id).then((response) => ({ isolate, id, response }));
    });
    const results = await Promise.all(attempts);
    for (const r of results) {
      if (r.response.status === 200) openStreams.push(r);
      else {
        assert.equal(r.response.status, 429);
        await r.response.arrayBuffer();
      }
    }
    return results.filter((r) => r.response.status === 200).length;
  };
  // From nothing held, 12 simultaneous opens from four isolates: exactly three get in.
  assert.equal(await launch(12), MAX);
  for (let round = 0; round < 6; round++) {
    // Close some (the first one or two), and at the same time try to open more.
    const closing = openStreams.splice(0, 1 + (round % 2));
    await Promise.all([...closing.map((s) => end(s.isolate, s.id, s.response)), launch(6)]);
    assert.ok(openStreams.length <= MAX, `round ${round}: ${openStreams.length} open at once, max ${MAX}`);
  }
  // Once every release has landed, the slots come back: end all, then exactly max open again.
  await Promise.all(openStreams.splice(0).map((s) => end(s.isolate, s.id, s.response)));
  const rule = ruleOf("streams", MAX, 60_000);
  await eventually(async () => (await object(objectOf(rule, "alice"), "rows")).length === 0, "every holder released (row removed)");
  assert.equal(await launch(8), MAX);
  await Promise.all(openStreams.splice(0).map((s) => end(s.isolate, s.id, s.response)));
});

test("a body that fails releases its slot", async () => {
  const first = await open(1, "/stream", "bob", "f1");
  assert.equal(first.status, 200);
  const held = [await open(2, "/stream", "bob", "f2"), await open(3, "/stream", "bob", "f3")];
  assert.equal((await open(0, "/stream", "bob", "f4")).status, 429);
  await end(1, "f1", first, true);
  await eventually(async () => {
    const again = await open(0, "/stream", "bob", "f5");
    if (again.status === 200) held.push(again);
    else await again.arrayBuffer();
    return again.status === 200;
  }, "the failed body's slot came back");
  await Promise.all([end(2, "f2", held[0]), end(3, "f3", held[1]), end(0, "f5", held[2])]);
});

test("a holder that vanishes (never releases, never renews) frees its slot after leaseSec", async () => {
  const rule = ruleOf("streams", 3, 60_000);
  const name = objectOf(rule, "carol");
  await object(name, "setKnob", "clock", T0);
  // Three holders acquire on the object and then vanish, as an evicted isolate's would.
  for (const holder of [11, 12, 13]) {
    const decision = await object(name, "concurrency", "acquire", { rule, key: "carol", holder, cost: 1 });
    assert.equal(decision.allowed, true);
  }
  const refused = await open(1, "/stream", "carol", "c1");
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get("retry-after"), "60");
  await refused.arrayBuffer();
  await object(name, "setKnob", "clock", T0 + 59_999);
  const stillRefused = await open(2, "/stream", "carol", "c2");
  assert.equal(stillRefused.status, 429);
  await stillRefused.arrayBuffer();
  await object(name, "setKnob", "clock", T0 + 60_000);
  const admitted = await open(3, "/stream", "carol", "c3");
  assert.equal(admitted.status, 200);
  // The sweep reclaims rows whose every lease ran out.
  await end(3, "c3", admitted);
  await object(name, "concurrency", "acquire", { rule, key: "carol", holder: 99, cost: 1 });
  await object(name, "setKnob", "clock", T0 + 200_000);
  await object(name, "runAlarm");
  assert.deepEqual(await object(name, "rows"), []);
});

test("an open holder's heartbeat renews its lease; releasing an unknown holder frees nothing", async () => {
  const rule = ruleOf("short", 1, 1_000);
  const name = objectOf(rule, "dave");
  await object(name, "setKnob", "clock", T0);
  const first = await open(0, "/short", "dave", "h1");
  assert.equal(first.status, 200);
  await object(name, "setKnob", "clock", T0 + 900);
  // Wait for a renewal at T0 + 900: the row's expiry moves to T0 + 1 900.
  await eventually(async () => (await object(name, "rows"))[0]?.expires_at === T0 + 1_900, "a renewal at the new time");
  await object(name, "setKnob", "clock", T0 + 1_500);
  const second = await open(1, "/short", "dave", "h2");
  assert.equal(second.status, 429, "the renewed holder still holds past its first lease");
  await second.arrayBuffer();
  const stray = await object(name, "concurrency", "release", { rule, key: "dave", holder: 424242 });
  assert.equal(stray.allowed, false);
  assert.equal(stray.remaining, 0, "still held by the open stream");
  await end(0, "h1", first);
  await eventually(async () => (await object(name, "rows")).length === 0, "released on end");
});

test("WebSocket upgrades hold a slot until the socket closes; the 3rd is refused before upgrading", async () => {
  const upgrade = (isolate) => workers[isolate].fetch("http://conn.test/ws", { headers: { upgrade: "websocket", "x-user": "erin" } });
  const a = await upgrade(0);
  const b = await upgrade(1);
  assert.equal(a.status, 101);
  assert.equal(b.status, 101);
  const refused = await upgrade(2);
  assert.equal(refused.status, 429);
  assert.equal(refused.webSocket, null);
  await refused.arrayBuffer();
  const socket = a.webSocket;
  socket.accept();
  const echoed = new Promise((resolve) => socket.addEventListener("message", (event) => resolve(event.data), { once: true }));
  socket.send("hi");
  assert.equal(await echoed, "echo hi");
  socket.close(1000, "done");
  let c;
  await eventually(async () => {
    c = await upgrade(3);
    if (c.status !== 101) await c.arrayBuffer();
    return c.status === 101;
  }, "the closed socket's slot came back");
  b.webSocket.accept();
  b.webSocket.close(1000);
  c.webSocket.accept();
  c.webSocket.close(1000);
});

test("through the relay, 20 messages per 10 s per connection: the 21st closes the socket with 1008 and frees its slot", async () => {
  const upgrade = (isolate) => workers[isolate].fetch("http://conn.test/ws", { headers: { upgrade: "websocket", "x-user": "fred" } });
  const response = await upgrade(2);
  assert.equal(response.status, 101);
  const socket = response.webSocket;
  const echoes = [];
  const closed = new Promise((resolve) => socket.addEventListener("close", (event) => resolve(event.code)));
  socket.addEventListener("message", (event) => echoes.push(event.data));
  socket.accept();
  for (let i = 1; i <= 21; i++) socket.send(`m${i}`);
  assert.equal(await closed, 1008);
  // The handler got exactly the 20 admitted messages; echoes still in flight when the socket closed
  // may be lost, but none beyond the 20th exists.
  const handled = async () => (await (await workers[2].fetch("http://conn.test/__test/received?user=fred")).json()).result;
  await eventually(async () => (await handled()) >= 20, "the handler got the admitted messages");
  assert.equal(await handled(), 20);
  assert.ok(echoes.length <= 20);
  assert.deepEqual(echoes, Array.from({ length: echoes.length }, (_, i) => `echo m${i + 1}`));
  // The close released the slot: two more fit (max 2).
  let opened = [];
  await eventually(async () => {
    const [x, y] = await Promise.all([upgrade(0), upgrade(1)]);
    opened = [x, y].filter((r) => r.status === 101);
    for (const r of [x, y]) if (r.status !== 101) await r.arrayBuffer();
    if (opened.length === 2) return true;
    for (const r of opened) {
      r.webSocket.accept();
      r.webSocket.close(1000);
    }
    return false;
  }, "both slots free after the 1008 close");
  for (const r of opened) {
    r.webSocket.accept();
    r.webSocket.close(1000);
  }
});
