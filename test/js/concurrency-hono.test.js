// The concurrency middleware under Node with Hono's app.request() (memory store): acquire before the
// handler, refuse over the limit before any work, release when the body ends, is cancelled or fails,
// or when the handler throws. Across isolates and WebSockets: concurrency-durable.test.js.
import assert from "node:assert/strict";
import { test } from "node:test";


const { Hono } = await import("hono");
const { concurrency, ip } = await import("../../worker/src/hono.js");
const { createConcurrencyLimiter } = await import("../../worker/src/sluice.js");

const T0 = Date.UTC(2030, 0, 1);
let now = T0;
const clock = () => now;
const client = { headers: { "cf-connecting-ip": "192.0.2.1" } };

// A body the test ends (or breaks) when it wants, and a promise per request of the handler having run.
function controlledBody() {
  let controller;
  const stream = new ReadableStream({ start: (c) => void (controller = c) });
  return { stream, push: (text) => controller.enqueue(new TextEncoder().encode(text)), end: () => controller.close(), fail: (e) => controller.error(e) };
}

test("over the limit: 429 with Retry-After before the handler runs", async () => {
  let ran = 0;
  const bodies = [];
  const app = new Hono();
  app.get("/", concurrency({ name: "n-429", key: ip(), max: 2, leaseSec: 30, clock }), (c) => {
    ran++;
    const body = controlledBody();
    bodies.push(body);
    return c.body(body.stream);
  });
  const first = await app.request("/", client);
  const second = await app.request("/", client);
  assert.equal(first.status, 200);
  assert.equal(second.status, 200);
  const third = await app.request("/", client);
  assert.equal(third.status, 429);
  assert.equal(ran, 2, "the refused request did no work");
  assert.equal(third.headers.get("retry-after"), "30");
  const body = await third.json();
  assert.equal(body.code, "too_many_concurrent");
  assert.equal(body.limit, 2);
  // Another client has slots of its own.
  assert.equal((await app.request("/", { headers: { "cf-connecting-ip": "192.0.2.2" } })).status, 200);
  // The first stream finishes: its slot is free once the body has been read to the end.
  bodies[0].push("a");
  bodies[0].end();
  assert.equal(await first.text(), "a");
  assert.equal((await app.request("/", client)).status, 200);
  assert.equal((await app.request("/", client)).status, 429);
});

test("a cancelled body and a failing body release their slot", async () => {
  const bodies = [];
  const app = new Hono();
  app.get("/", concurrency({ name: "n-cancel", key: ip(), max: 1, leaseSec: 30, clock }), (c) => {
    const body = controlledBody();
    bodies.push(body);
    return c.body(body.stream);
  });
  const first = await app.request("/", client);
  assert.equal((await app.request("/", client)).status, 429);
  await first.body.cancel("client went away");
  const second = await app.request("/", client);
  assert.equal(second.status, 200);
  assert.equal((await app.request("/", client)).status, 429);
  const reader = second.body.getReader();
  bodies.at(-1).fail(new Error("upstream broke"));
  await assert.rejects(reader.read());
  assert.equal((await app.request("/", client)).status, 200);
});

test("a handler that throws releases at once; a response without a body releases at once", async () => {
  const app = new Hono();
  app.onError((error, c) => c.text(error.message, 500));
  const limit = concurrency({ name: "n-throw", key: ip(), max: 1, leaseSec: 30, clock });
  app.get("/throw", limit, () => {
    throw new Error("boom");
  });
  app.get("/empty", limit, (c) => c.body(null, 204));
  for (let i = 0; i < 3; i++) assert.equal((await app.request("/throw", client)).status, 500);
  for (let i = 0; i < 3; i++) assert.equal((await app.request("/empty", client)).status, 204);
});

test("content built in full (c.text, c.json, c.body of bytes) releases when the handler returns; a stream holds until read", async () => {
  const app = new Hono();
  const limit = concurrency({ name: "n-built", key: ip(), max: 1, leaseSec: 30, clock });
  app.get("/text", limit, (c) => c.text("ok"));
  app.get("/json", limit, (c) => c.json({ ok: true }));
  app.get("/bytes", limit, (c) => c.body(new TextEncoder().encode("ok")));
  const streams = [];
  app.get("/stream", limit, (c) => {
    const body = controlledBody();
    streams.push(body);
    return c.body(body.stream);
  });
  // A later middleware that swaps the built response for a stream: the stream's end releases.
  const swapped = [];
  app.get("/swapped", limit, async (c, next) => {
    await next();
    const body = controlledBody();
    swapped.push(body);
    c.res = new Response(body.stream, { status: 200 });
  }, (c) => c.text("built, then replaced"));
  // Unread bodies: each built one has released its slot already, so the next request gets in.
  for (const path of ["/text", "/json", "/bytes", "/text"]) assert.equal((await app.request(path, client)).status, 200, path);
  const open = await app.request("/stream", client);
  assert.equal(open.status, 200);
  assert.equal((await app.request("/text", client)).status, 429, "an unread stream holds its slot");
  streams[0].push("a");
  streams[0].end();
  assert.equal(await open.text(), "a");
  const replaced = await app.request("/swapped", client);
  assert.equal(replaced.status, 200);
  assert.equal((await app.request("/text", client)).status, 429, "a built response another middleware replaced with a stream holds");
  swapped[0].end();
  await replaced.text();
  assert.equal((await app.request("/text", client)).status, 200);
});

test("a holder that never releases frees its slot after leaseSec (injected clock)", async () => {
  now = T0;
  const app = new Hono();
  app.get("/", concurrency({ name: "n-lease", key: ip(), max: 1, leaseSec: 10, clock }), (c) => c.body(controlledBody().stream));
  const open = await app.request("/", client); // never read: its holder never releases
  assert.equal(open.status, 200);
  now = T0 + 9_999;
  assert.equal((await app.request("/", client)).status, 429);
  now = T0 + 10_000;
  assert.equal((await app.request("/", client)).status, 200);
  now = T0;
});

test("status, retryAfterSec, onLimited and c.get('concurrency')", async () => {
  const app = new Hono();
  let served = 0;
  // The first answer is JSON (released when the handler returns); the next ones stream, holding the slot.
  app.get("/", concurrency({ name: "n-opts", key: "everyone", max: 1, status: 503, retryAfterSec: 2, clock }), (c) =>
    served++ === 0 ? c.json(c.get("concurrency")) : c.body(controlledBody().stream),
  );
  app.get("/custom", concurrency({ name: "n-custom", key: "everyone", max: 1, clock, onLimited: (c, d) => c.text(`busy ${d.limit}`, 429) }), (c) => c.body(controlledBody().stream));
  const ok = await app.request("/");
  const decision = await ok.json();
  assert.equal(decision.allowed, true);
  assert.equal(decision.store, "memory");
  const held = await app.request("/"); // the JSON answer above released its slot
  assert.equal(held.status, 200);
  const refused = await app.request("/");
  assert.equal(refused.status, 503);
  assert.equal(refused.headers.get("retry-after"), "2");
  await app.request("/custom");
  const custom = await app.request("/custom");
  assert.equal(await custom.text(), "busy 1");
});

test("createConcurrencyLimiter.handle: the same for a plain fetch handler", async () => {
  const limiter = createConcurrencyLimiter({ name: "n-fetch", key: ip(), max: 1, clock });
  const bodies = [];
  const handler = () => {
    const body = controlledBody();
    bodies.push(body);
    return new Response(body.stream);
  };
  const request = () => new Request("https://example.com/", client);
  const first = await limiter.handle(request(), {}, undefined, handler);
  assert.equal((await limiter.handle(request(), {}, undefined, handler)).status, 429);
  bodies[0].end();
  await first.arrayBuffer();
  assert.equal((await limiter.handle(request(), {}, undefined, handler)).status, 200);
  await assert.rejects(limiter.handle(new Request("https://example.com/", { headers: { "cf-connecting-ip": "192.0.2.9" } }), {}, undefined, () => {
    throw new Error("boom");
  }));
  assert.equal((await limiter.handle(new Request("https://example.com/", { headers: { "cf-connecting-ip": "192.0.2.9" } }), {}, undefined, () => new Response("x"))).status, 200);
});

test("invalid options throw a SluiceConfigError naming the field", () => {
  const cases = [
    [{ max: 1 }, "key"],
    [{ key: "k" }, "max"],
    [{ key: "k", max: 0 }, "max"],
    [{ key: "k", max: 2 ** 16 + 1 }, "max"],
    [{ key: "k", max: 1, leaseSec: 0 }, "leaseSec"],
    [{ key: "k", max: 1, leaseSec: 10, renewEverySec: 10 }, "renewEverySec"],
    [{ key: "k", max: 1, store: "kv" }, "store"],
    [{ key: "k", max: 1, timeoutMs: 10 }, "timeoutMs"],
    [{ key: "k", max: 1, store: "durable", failMode: "maybe" }, "failMode"],
    [{ key: "k", max: 1, status: 200 }, "status"],
    [{ key: "k", max: 2, cost: 3 }, "cost"],
    [{ key: "k", max: 1, limit: 5 }, "limit"],
  ];
  for (const [options, field] of cases) {
    assert.throws(() => concurrency(options), (error) => error.name === "SluiceConfigError" && error.field === field, JSON.stringify(options));
  }
});

test("a Durable Object that fails: the isolate's memory decides (counted), or failMode does", async () => {
  const request = () => new Request("https://example.com/", client);
  const ok = () => new Response("ok");
  // env has a SLUICE_DO whose every call fails (an outage, not a misconfiguration).
  const env = { SLUICE_DO: { idFromName: (name) => name, get: () => ({ concurrency: () => Promise.reject(new Error("the object is down")) }) } };
  const withFallback = createConcurrencyLimiter({ name: "n-fallback", key: ip(), max: 1, store: "durable", clock });
  const first = await withFallback.handle(request(), env, undefined, () => new Response(controlledBody().stream));
  assert.equal(first.status, 200);
  assert.equal((await withFallback.handle(request(), env, undefined, ok)).status, 429, "the fallback counts: max 1 in this isolate");
  assert.equal(withFallback.counters.durableFailures >= 2, true);
  assert.equal(withFallback.counters.fellBack, 2);

  const closed = createConcurrencyLimiter({ name: "n-closed", key: ip(), max: 1, store: "durable", fallback: false, failMode: "closed", clock });
  assert.equal((await closed.handle(request(), env, undefined, ok)).status, 429);
  assert.equal(closed.counters.failedClosed, 1);
  const open = createConcurrencyLimiter({ name: "n-open", key: ip(), max: 1, store: "durable", fallback: false, failMode: "open", clock });
  assert.equal((await open.handle(request(), env, undefined, ok)).status, 200);
  assert.equal((await open.handle(request(), env, undefined, ok)).status, 200, "nothing counts: open admits");
  assert.equal(open.counters.failedOpen, 2);
  // env without the binding at all: a misconfiguration, thrown (naming the field), neither counted nor admitted.
  await assert.rejects(open.handle(request(), {}, undefined, ok), (error) => error.name === "SluiceConfigError" && error.field === "binding");
  assert.equal(open.counters.failedOpen, 2);
});
