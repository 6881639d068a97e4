// Issue 23, WebSockets: can the gateway count or bound a client's control frames? Evidence, over a raw
// socket to the shipped demo gateway (its /ws route relays to the demo upstream's echo): each ping is
// answered with its pong by workerd itself, while the gateway's message counter moves for the one
// data message only. A Worker's WebSocket has events for messages, close and errors, none for a ping,
// so pings can be neither counted nor bounded by a Worker (docs/gateway.md, `routes[i].websocket`).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { after, before, test } from "node:test";
import { ADMIN_TOKEN, UPSTREAM_TOKEN } from "./fixtures/gateway/harness.js";
import { parseExposition, sample } from "./helpers/prometheus.js";
import { startWorkers, storeBindings } from "./helpers/worker.js";

let mf;
before(async () => {
  mf = await startWorkers([
    {
      name: "g0",
      entry: "demo",
      bindings: { ENV: "production", UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN },
      serviceBindings: { DEMO_UPSTREAM: { name: "g0", entrypoint: "DemoUpstream" } },
      ...storeBindings("g0", "g0", "SluiceDurableObject"),
    },
  ]);
});
after(() => mf?.dispose());

// A client frame (masked, as RFC 6455 requires of clients) with a payload under 126 bytes.
function clientFrame(opcode, payload) {
  const data = Buffer.from(payload);
  const mask = randomBytes(4);
  const masked = Buffer.from(data.map((byte, i) => byte ^ mask[i % 4]));
  return Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | data.length]), mask, masked]);
}

// The server's frames in `bytes` (unmasked, payloads under 126 bytes), and what is left over.
function serverFrames(bytes) {
  const frames = [];
  let at = 0;
  while (at + 2 <= bytes.length && at + 2 + (bytes[at + 1] & 0x7f) <= bytes.length) {
    const length = bytes[at + 1] & 0x7f;
    frames.push({ opcode: bytes[at] & 0x0f, payload: bytes.subarray(at + 2, at + 2 + length).toString() });
    at += 2 + length;
  }
  return { frames, rest: bytes.subarray(at) };
}

async function messagesAdmitted() {
  const response = await mf.dispatchFetch("http://gateway.test/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return sample(parseExposition(await response.text()), "sluice_websocket_messages_total", { route: "/ws", outcome: "admitted" }) ?? 0;
}

test("pings through the gateway are answered by the runtime, and only data messages are counted", async () => {
  const url = await mf.ready;
  const before = await messagesAdmitted();
  const socket = net.connect(Number(url.port), url.hostname);
  let buffered = Buffer.alloc(0);
  let upgraded = false;
  const frames = [];
  const waiters = [];
  socket.on("data", (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    if (!upgraded) {
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      assert.match(buffered.subarray(0, end).toString(), /^HTTP\/1\.1 101/);
      upgraded = true;
      buffered = buffered.subarray(end + 4);
    }
    const parsed = serverFrames(buffered);
    frames.push(...parsed.frames);
    buffered = parsed.rest;
    for (const waiter of waiters.splice(0)) waiter();
  });
  const framesArrived = async (count) => {
    for (let i = 0; i < 400 && frames.length < count; i++) await new Promise((resolve) => (waiters.push(resolve), setTimeout(resolve, 25)));
    assert.ok(frames.length >= count, `${frames.length} frames of ${count}: ${JSON.stringify(frames)}`);
  };
  socket.write(
    [
      "GET /ws HTTP/1.1",
      "Host: gateway.test",
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
      "Sec-WebSocket-Version: 13",
      "CF-Connecting-IP: 192.0.2.70",
      "",
      "",
    ].join("\r\n"),
  );
  // One ping at a time: each is answered with its own pong.
  for (let i = 1; i <= 5; i++) {
    socket.write(clientFrame(0x9, `ping-${i}`));
    await framesArrived(i);
    assert.deepEqual(frames[i - 1], { opcode: 0xa, payload: `ping-${i}` });
  }
  // A burst: RFC 6455 lets an endpoint answer only the latest ping it has not answered yet, and
  // workerd may: the last pong answers the last ping.
  for (let i = 1; i <= 20; i++) socket.write(clientFrame(0x9, `burst-${i}`));
  const seen = frames.length;
  await framesArrived(seen + 1);
  for (let i = 0; i < 20 && frames.at(-1).payload !== "burst-20"; i++) await new Promise((resolve) => setTimeout(resolve, 25));
  assert.deepEqual(frames.at(-1), { opcode: 0xa, payload: "burst-20" });
  assert.ok(frames.slice(seen).every((frame) => frame.opcode === 0xa && frame.payload.startsWith("burst-")));
  const pongs = frames.length;
  socket.write(clientFrame(0x1, "hello"));
  await framesArrived(pongs + 1);
  assert.equal(frames[pongs].opcode, 0x1, "the message was relayed and echoed");
  socket.write(clientFrame(0x8, Buffer.from([0x03, 0xe8])));
  socket.destroy();
  // 25 pings and one message: the counter moved by one.
  assert.equal((await messagesAdmitted()) - before, 1);
});
