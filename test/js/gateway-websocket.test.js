// The gateway's WebSocket proxy, end to end in workerd: the shipped Worker (gateway.config.json) in
// front of the demo upstream's echo on /ws. At most 3 open connections per user (bearer token; no
// token: the IP), the 4th upgrade answered 429 before upgrading; 20 messages per 10 s per connection,
// the 21st closes the socket with 1008; a message over 64 KiB closes it with 1009 and never reaches the
// upstream. Two isolates share the Durable Object that counts connections. The admin endpoint counts
// refused connections and every message's fate.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { ADMIN_TOKEN, UPSTREAM_TOKEN } from "./fixtures/gateway/harness.js";
import { parseExposition, sample } from "./helpers/prometheus.js";
import { startWorkers, storeBindings } from "./helpers/worker.js";

let mf;
let gateways;

function shipped(name) {
  return {
    name,
    entry: "demo",
    bindings: { ENV: "production", UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN },
    serviceBindings: { DEMO_UPSTREAM: { name, entrypoint: "DemoUpstream" } },
    ...storeBindings(name, "g0", "SluiceDurableObject"),
  };
}

before(async () => {
  mf = await startWorkers([shipped("g0"), shipped("g1")]);
  gateways = [await mf.getWorker("g0"), await mf.getWorker("g1")];
});
after(() => mf?.dispose());

const upgrade = (isolate, headers) => gateways[isolate].fetch("http://gateway.test/ws", { headers: { upgrade: "websocket", "cf-connecting-ip": "192.0.2.50", ...headers } });

async function opened(response) {
  assert.equal(response.status, 101);
  const socket = response.webSocket;
  const received = [];
  const closed = new Promise((resolve) => socket.addEventListener("close", (event) => resolve(event.code)));
  socket.addEventListener("message", (event) => received.push(event.data));
  socket.accept();
  return { socket, received, closed };
}

async function eventually(condition, what, attempts = 200) {
  for (let i = 0; i < attempts; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`never happened: ${what}`);
}

test("echo through the gateway; the 4th open connection of a user is refused with 429 before upgrading", async () => {
  const alice = { authorization: "Bearer alice-token" };
  const first = await opened(await upgrade(0, alice));
  const echoed = new Promise((resolve) => first.socket.addEventListener("message", (event) => resolve(event.data), { once: true }));
  first.socket.send("hello");
  assert.equal(await echoed, "hello");
  const second = await opened(await upgrade(1, alice));
  const third = await opened(await upgrade(0, alice));
  const fourth = await upgrade(1, alice);
  assert.equal(fourth.status, 429);
  assert.equal(fourth.webSocket, null);
  assert.ok(Number(fourth.headers.get("retry-after")) >= 1);
  assert.equal((await fourth.json()).code, "sluice_too_many_connections");
  // Another user (another token, same IP) has connections of their own.
  const bob = await opened(await upgrade(0, { authorization: "Bearer bob-token" }));
  // Closing one of alice's frees a slot.
  first.socket.close(1000, "done");
  let again;
  await eventually(async () => {
    again = await upgrade(1, alice);
    if (again.status !== 101) await again.arrayBuffer();
    return again.status === 101;
  }, "alice's closed connection freed its slot");
  for (const s of [second, third, bob, await opened(again)]) s.socket.close(1000);
});

test("without a token, connections count per IP", async () => {
  const ip = { "cf-connecting-ip": "198.51.100.7" };
  const open = [];
  for (let i = 0; i < 3; i++) open.push(await opened(await upgrade(i % 2, ip)));
  const refused = await upgrade(0, ip);
  assert.equal(refused.status, 429);
  await refused.arrayBuffer();
  for (const s of open) s.socket.close(1000);
});

test("20 messages per 10 s per connection: the 21st closes the socket with 1008", async () => {
  const carol = await opened(await upgrade(0, { authorization: "Bearer carol-token" }));
  for (let i = 1; i <= 21; i++) carol.socket.send(`m${i}`);
  assert.equal(await carol.closed, 1008);
  // Echoes in flight when the socket closed may be lost; none beyond the 20th exists, and they come in order.
  assert.ok(carol.received.length <= 20);
  assert.deepEqual(carol.received, Array.from({ length: carol.received.length }, (_, i) => `m${i + 1}`));
});

test("a message over maxMessageBytes (64 KiB) closes the socket with 1009 and never reaches the upstream; one at the bound passes", async () => {
  const dave = await opened(await upgrade(0, { authorization: "Bearer dave-token" }));
  const atBound = "a".repeat(65_536);
  const echoed = new Promise((resolve) => dave.socket.addEventListener("message", (event) => resolve(event.data), { once: true }));
  dave.socket.send(atBound);
  assert.equal((await echoed).length, 65_536);
  // 21,846 three-byte characters: 65,538 UTF-8 bytes in 21,846 UTF-16 units.
  dave.socket.send("\u20ac".repeat(21_846));
  assert.equal(await dave.closed, 1009);
  assert.equal(dave.received.length, 1, "the oversized message was not echoed");
});

test("binary messages are measured by their bytes, text by its UTF-8 bytes", async () => {
  // Miniflare's test client turns a binary frame into text on the way, so binary is checked here.
  const { overSize } = await import("../../worker/gateway/websocket.js");
  assert.equal(overSize(new ArrayBuffer(65_536), 65_536), false);
  assert.equal(overSize(new ArrayBuffer(65_537), 65_536), true);
  assert.equal(overSize("\u20ac".repeat(21_845), 65_536), false); // 65,535 bytes
  assert.equal(overSize("\u20ac".repeat(21_846), 65_536), true); // 65,538 bytes in 21,846 units
  assert.equal(overSize("\u{1F600}".repeat(16_384), 65_536), false); // 4 bytes in 2 units each: 65,536
  assert.equal(overSize("\u{1F600}".repeat(16_385), 65_536), true);
});

test("the admin endpoint counts refused connections and each message's fate, per route", async () => {
  const scrape = async (isolate) =>
    parseExposition(await (await gateways[isolate].fetch("http://gateway.test/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text());
  const before = await scrape(0);
  const count = (families, name, outcome) => sample(families, name, { route: "/ws", outcome }) ?? 0;
  const frank = { authorization: "Bearer frank-token", "cf-connecting-ip": "192.0.2.52" };
  const open = [];
  for (let i = 0; i < 3; i++) open.push(await opened(await upgrade(0, frank)));
  const refused = await upgrade(0, frank);
  assert.equal(refused.status, 429);
  await refused.arrayBuffer();
  for (let i = 1; i <= 21; i++) open[0].socket.send(`n${i}`);
  assert.equal(await open[0].closed, 1008);
  open[1].socket.send("b".repeat(65_537));
  assert.equal(await open[1].closed, 1009);
  open[2].socket.close(1000);
  const after = await scrape(0);
  const delta = (name, outcome) => count(after, name, outcome) - count(before, name, outcome);
  assert.equal(delta("sluice_websocket_connections_total", "opened"), 3);
  assert.equal(delta("sluice_websocket_connections_total", "refused"), 1);
  assert.equal(delta("sluice_websocket_messages_total", "admitted"), 20);
  assert.equal(delta("sluice_websocket_messages_total", "rate_limited"), 1);
  assert.equal(delta("sluice_websocket_messages_total", "too_large"), 1);
});

test("a plain GET on the WebSocket route is proxied as any request (the upstream asks for an upgrade)", async () => {
  const response = await gateways[0].fetch("http://gateway.test/ws", { headers: { "cf-connecting-ip": "192.0.2.51" } });
  assert.equal(response.status, 426);
});
