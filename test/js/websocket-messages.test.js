// Message limits on open WebSockets (createMessageLimiter) under Node, with sockets that record what
// they were sent: per connection and per key, the error frame, the close after N drops, the state a
// gate carries through hibernation. In workerd, through a relayed socket: concurrency-durable.test.js.
import assert from "node:assert/strict";
import { test } from "node:test";


const { ChunkLimitError, createMessageLimiter, limitChunks, limitMessages } = await import("../../worker/src/sluice.js");
const { isolateTestHooks } = await import("../../worker/src/engine/isolate.js");

const T0 = Date.UTC(2030, 0, 1);
let now = T0;
const clock = () => now;

function fakeSocket() {
  return {
    sent: [],
    closed: null,
    send(data) {
      this.sent.push(data);
    },
    close(code, reason) {
      this.closed = { code, reason };
    },
  };
}

test("20 per 10 s per connection: the 21st is dropped with an error frame; another connection is apart", () => {
  now = T0;
  const messages = createMessageLimiter({ name: "m-error", perConnection: { limit: 20, windowSec: 10, algorithm: "fixed-window" }, clock });
  const gate = messages.connection("alice");
  const socket = fakeSocket();
  for (let i = 0; i < 20; i++) assert.equal(gate.admit(socket), true, `message ${i + 1}`);
  assert.equal(gate.admit(socket), false);
  assert.equal(socket.sent.length, 1);
  assert.deepEqual(JSON.parse(socket.sent[0]), { error: "rate_limited", retryAfter: 10 });
  assert.equal(socket.closed, null, "onLimited 'error' never closes by default");
  assert.equal(messages.connection("alice").admit(fakeSocket()), true, "a second connection of the same key has its own count");
  now = T0 + 10_000;
  assert.equal(gate.admit(socket), true, "the next window");
  assert.equal(gate.violations, 1);
});

test("onLimited 'close': the 21st message closes with 1008; 4429 after 3 drops when configured", () => {
  now = T0;
  const closing = createMessageLimiter({ name: "m-close", perConnection: { limit: 20, windowSec: 10 }, onLimited: "close", clock });
  const gate = closing.connection("bob");
  const socket = fakeSocket();
  for (let i = 0; i < 20; i++) gate.admit(socket);
  assert.equal(gate.admit(socket), false);
  assert.deepEqual(socket.closed, { code: 1008, reason: "message rate limit exceeded" });
  assert.equal(gate.admit(socket), false, "nothing passes once closed");

  const patient = createMessageLimiter({ name: "m-4429", perConnection: { limit: 1, windowSec: 10 }, closeAfter: 3, closeCode: 4429, clock });
  const other = patient.connection("carol");
  const s = fakeSocket();
  assert.equal(other.admit(s), true);
  assert.equal(other.admit(s), false);
  assert.equal(other.admit(s), false);
  assert.equal(s.closed, null);
  assert.equal(s.sent.length, 2, "two error frames");
  assert.equal(other.admit(s), false);
  assert.equal(s.closed.code, 4429);
});

test("per key: every connection of a key shares one count", () => {
  now = T0;
  const messages = createMessageLimiter({ name: "m-key", perKey: { limit: 3, windowSec: 10 }, clock });
  const a = messages.connection("dave");
  const b = messages.connection("dave");
  const socket = fakeSocket();
  assert.equal(a.admit(socket), true);
  assert.equal(b.admit(socket), true);
  assert.equal(a.admit(socket), true);
  assert.equal(b.admit(socket), false);
  assert.equal(messages.connection("erin").admit(socket), true);
});

test("a gate's snapshot carries its count through hibernation", () => {
  now = T0;
  const messages = createMessageLimiter({ name: "m-hibernate", perConnection: { limit: 2, windowSec: 10, algorithm: "sliding-log" }, clock });
  const gate = messages.connection("frank");
  const socket = fakeSocket();
  assert.equal(gate.admit(socket), true);
  assert.equal(gate.admit(socket), true);
  // As serializeAttachment would keep it (structured clone), then a fresh gate from it.
  const saved = structuredClone(gate.snapshot());
  // The object is evicted while hibernating: the isolate that wakes it starts with nothing.
  isolateTestHooks.reset();
  assert.equal(messages.connection("frank", { ...saved, connectionState: null }).admit(fakeSocket()), true, "without the saved state, the count is gone");
  isolateTestHooks.reset();
  const woken = messages.connection("frank", saved);
  assert.equal(woken.id, gate.id);
  assert.equal(woken.admit(socket), false, "still two in the window after waking up");
  now = T0 + 10_000;
  assert.equal(woken.admit(socket), true);
});

test("limitMessages: Hono's onMessage only sees admitted messages", () => {
  now = T0;
  const messages = createMessageLimiter({ name: "m-hono", perConnection: { limit: 1, windowSec: 10 }, clock });
  const seen = [];
  const events = limitMessages(messages.connection("gina"), { onMessage: (event) => seen.push(event.data), onClose: () => {} });
  const ws = fakeSocket();
  events.onMessage({ data: "one" }, ws);
  events.onMessage({ data: "two" }, ws);
  assert.deepEqual(seen, ["one"]);
  assert.equal(typeof events.onClose, "function");
});

test("invalid options throw a SluiceConfigError naming the field", () => {
  const cases = [
    [{}, "perConnection"],
    [{ perConnection: { limit: 0, windowSec: 10 } }, "perConnection.limit"],
    [{ perConnection: { limit: 5 } }, "perConnection.windowSec"],
    [{ perKey: { limit: 5, windowSec: 10, burst: 2 } }, "perKey.burst"],
    [{ perConnection: { limit: 5, windowSec: 10 }, onLimited: "ignore" }, "onLimited"],
    [{ perConnection: { limit: 5, windowSec: 10 }, closeCode: 1000 }, "closeCode"],
    [{ perConnection: { limit: 5, windowSec: 10 }, closeAfter: 0 }, "closeAfter"],
    [{ perConnection: { limit: 5, windowSec: 10 }, every: 1 }, "every"],
  ];
  for (const [options, field] of cases) {
    assert.throws(() => createMessageLimiter(options), (error) => error.name === "SluiceConfigError" && error.field === field, JSON.stringify(options));
  }
});

test("limitChunks: a streaming body's chunks are counted; the one over the limit fails the stream", async () => {
  now = T0;
  const chunks = createMessageLimiter({ name: "m-chunks", perConnection: { limit: 3, windowSec: 10 }, clock });
  const source = new ReadableStream({
    start(controller) {
      for (let i = 0; i < 5; i++) controller.enqueue(new Uint8Array([i]));
      controller.close();
    },
  });
  const reader = limitChunks(source, chunks.connection("upload")).getReader();
  const got = [];
  await assert.rejects(async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      got.push(value[0]);
    }
  }, ChunkLimitError);
  assert.deepEqual(got, [0, 1, 2]);
});
