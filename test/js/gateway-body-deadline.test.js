// Issue 23: upstream.bodyDeadlineMs, the body's whole time bounded instead of its silences (with
// bodyTimeoutMs null), so that a body the gateway does not mask is piped by the runtime and still
// cannot hold a client for ever. Run in workerd in front of a Node HTTP upstream; the upstream sets the
// pace, and the assertions count bytes and events, never time:
//   - an upstream that streams steadily (no silence a silence bound would see) for longer than the
//     deadline is cut: the client never has the whole body, and it is counted once as body_timeout,
//     piped natively (a media type, maskBody "never"), masked and streamed, or masked and read whole;
//   - a body that ends within the deadline arrives whole, and nothing is counted once the deadline
//     has passed;
//   - a client that hangs up before the deadline is no body_timeout, however long the upstream goes on;
//   - bodyDeadlineMs beside a bodyTimeoutMs (its default included) fails at start-up naming the field.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { drainResponse, relayRoute, startRelayGateway } from "./helpers/relay-gateway.js";
import { validateConfig } from "../../worker/gateway/config.js";

const ADMIN_TOKEN = "body-deadline-admin-token-0123456789abcdef";
const DEADLINE_MS = 400;
const pattern = (from, length) => Buffer.from(Array.from({ length }, (_, i) => 97 + ((from + i) % 26)));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The upstream: `bytes` in pieces of `piece` bytes, `gapMs` apart, as `type`; `length=1` announces the
// whole. Each response reports how it was closed (finished or cut off) under its `id`.
const closed = new Map();

function upstreamHandler(request, response) {
  const query = new URL(request.url, "http://upstream").searchParams;
  const bytes = Number(query.get("bytes"));
  const piece = Number(query.get("piece") ?? bytes);
  const gapMs = Number(query.get("gapMs") ?? 0);
  const id = query.get("id");
  let finish;
  closed.set(id, new Promise((resolve) => (finish = resolve)));
  response.on("close", () => finish(response.writableFinished));
  response.writeHead(200, { "content-type": query.get("type") ?? "image/webp", ...(query.get("length") === "1" ? { "content-length": String(bytes) } : {}) });
  response.flushHeaders();
  let at = 0;
  const step = () => {
    if (response.destroyed) return;
    const end = Math.min(bytes, at + piece);
    response.write(pattern(at, end - at));
    at = end;
    if (at >= bytes) response.end();
    else setTimeout(step, gapMs);
  };
  step();
}

describe("upstream.bodyDeadlineMs: the whole body bounded, in workerd", () => {
  let relay;
  let requests = 0;

  before(async () => {
    const bounded = { bodyTimeoutMs: null, bodyDeadlineMs: DEADLINE_MS };
    relay = await startRelayGateway({
      handler: upstreamHandler,
      adminToken: ADMIN_TOKEN,
      routes: (origin) => [relayRoute(origin, "/media", bounded), relayRoute(origin, "/never", { ...bounded, maskBody: "never" }), relayRoute(origin, "/masked", bounded)],
    });
  });

  after(() => relay?.close());

  // Resolves to the response and the id its upstream request reports under.
  async function get(route, query) {
    const id = String(++requests);
    const response = await relay.gateway.fetch(`https://gw.test${route}/x?id=${id}&${query}`, { headers: { "cf-connecting-ip": "192.0.2.41" } });
    return { response, id };
  }

  const bodyTimeouts = (route) => relay.scrape(route, "sluice_upstream_failures_total", { reason: "body_timeout" });

  // 24 pieces 100 ms apart: about six deadlines long, and never silent for more than a tenth of one.
  const steady = "bytes=24000&piece=1000&gapMs=100";
  for (const [route, type, withLength, how] of [
    ["/media", "image/webp", false, "piped by the runtime (a media type)"],
    ["/media", "image/webp", true, "piped by the runtime at its Content-Length"],
    ["/never", "text/plain", false, 'piped by the runtime (maskBody "never")'],
    ["/masked", "text/plain", false, "masked, streamed"],
    ["/masked", "text/plain", true, "masked, read whole (a Content-Length under 64 KiB)"],
  ]) {
    test(`a body streamed steadily for longer than the deadline is cut and counted once: ${how}`, { timeout: 30_000 }, async () => {
      const before = await bodyTimeouts(route);
      const { response, id } = await get(route, `${steady}&type=${encodeURIComponent(type)}${withLength ? "&length=1" : ""}`);
      assert.equal(response.status, 200);
      const { bytes, error } = await drainResponse(response);
      // Chunked, workerd may end a failed body with its last chunk (cloudflare/workerd#6818): never the whole.
      assert.ok(bytes.length < 24000, `got ${bytes.length} bytes of 24000`);
      assert.ok(error !== null || !withLength, "a body of known length ends in an error the client sees");
      assert.deepEqual(bytes, pattern(0, bytes.length), "what arrived is the body's start, in order");
      assert.equal(await closed.get(id), false, "the upstream's response was cut off, not read to its end");
      assert.equal((await bodyTimeouts(route)) - before, 1);
    });
  }

  for (const route of ["/media", "/never", "/masked"]) {
    test(`${route}: a body that ends within the deadline arrives whole, and nothing is counted once the deadline has passed`, { timeout: 30_000 }, async () => {
      const before = await bodyTimeouts(route);
      for (const withLength of [false, true]) {
        const { response } = await get(route, `bytes=200000&piece=50000&gapMs=20&type=text%2Fplain${withLength ? "&length=1" : ""}`);
        const { bytes, error } = await drainResponse(response);
        assert.equal(error, null);
        assert.deepEqual(bytes, pattern(0, 200000));
      }
      await sleep(DEADLINE_MS * 2);
      assert.equal((await bodyTimeouts(route)) - before, 0);
    });
  }

  test("a client that hangs up before the deadline is no body_timeout, and the upstream's request is closed", { timeout: 30_000 }, async () => {
    const before = await bodyTimeouts("/media");
    const { response, id } = await get("/media", "bytes=100000&piece=1000&gapMs=50");
    const reader = response.body.getReader();
    assert.equal((await reader.read()).done, false);
    await reader.cancel(new Error("the client hung up"));
    assert.equal(await closed.get(id), false);
    await sleep(DEADLINE_MS * 2);
    assert.equal((await bodyTimeouts("/media")) - before, 0);
  });
});

test("bodyDeadlineMs beside a bodyTimeoutMs, its default included, is refused naming the field", () => {
  const route = (upstream) => ({ routes: [{ prefix: "/m", methods: ["GET"], upstream: { url: "https://api.example.com/m", ...upstream }, rules: [{ name: "m", algorithm: "fixed-window", limit: 10, windowSec: 60, key: "ip" }] }] });
  for (const upstream of [{ bodyDeadlineMs: 1000 }, { bodyDeadlineMs: 1000, bodyTimeoutMs: 5000 }]) {
    assert.throws(() => validateConfig(route(upstream)), (error) => error.message.includes("routes[0].upstream.bodyDeadlineMs") && /bodyTimeoutMs to null/.test(error.message));
  }
  for (const bad of [0, 86_400_001, 1.5, "1000"]) {
    assert.throws(() => validateConfig(route({ bodyTimeoutMs: null, bodyDeadlineMs: bad })), /routes\[0\]\.upstream\.bodyDeadlineMs/);
  }
  assert.equal(validateConfig(route({ bodyTimeoutMs: null, bodyDeadlineMs: 1000 })).routes[0].upstream.bodyDeadlineMs, 1000);
  assert.equal(validateConfig(route({})).routes[0].upstream.bodyDeadlineMs, null);
});
