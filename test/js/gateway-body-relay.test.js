// Issue 23, a gateway at a tenth of today's CPU: in workerd the gateway reads an upstream's body with a
// BYOB reader into one large buffer (body-watchdog.js's relayCoalesced), so that whatever has arrived
// is one stream step, keeps the bytes held back for masking in front of the next read in that buffer,
// and reuses the buffer once the client's side took a write. These tests run the real gateway in
// workerd in front of a Node HTTP upstream (the way a deployment reaches its API) and check what that
// must not change:
//   - no byte is lost, moved or corrupted, whatever the chunking and pauses of the upstream: every
//     byte the client gets is the upstream's, or a `*` of the mask;
//   - masking is as strong: the client's body, masked again whole, has nothing left to mask, although
//     the upstream's bodies are full of the secret, its fragments and their spellings, cut anywhere;
//   - a streaming client is not kept waiting for a buffer to fill: a chunk the upstream writes alone
//     reaches the client before the upstream writes the next (no timing: the upstream waits for the
//     client to have it, so a gateway that waited for more would never answer and the test fails).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import { Miniflare } from "miniflare";

import { random } from "../../bench/worker/workload.js"; // the bench's seeded PRNG (mulberry32)
import { secretMasker } from "../../worker/gateway/redact.js";
import { leakSpellings } from "./fixtures/gateway/harness.js";
import { configModule, workerOptions } from "./helpers/worker.js";

const SECRET = "relay-upstream-secret/+=&x7f3a9c1e5b2d4f60a8e1c3";
const ADMIN_TOKEN = "relay-admin-token-0123456789abcdef0123456789";
const encoder = new TextEncoder();

// Bodies the upstream serves, by id: { bytes, chunks: [sizes], pauses: [bool] }. A pause before a
// chunk lets the gateway read what came so far alone; no pause lets several chunks arrive together.
const bodies = new Map();
// Streams whose next write waits for the test: id -> { parts, gate(i) -> Promise }.
const streams = new Map();

function upstreamHandler(request, response) {
  const url = new URL(request.url, "http://upstream");
  const id = url.searchParams.get("id");
  const type = url.searchParams.get("type") ?? "text/plain; charset=utf-8";
  if (streams.has(id)) {
    const { parts, gate } = streams.get(id);
    response.writeHead(200, { "content-type": type });
    (async () => {
      for (let i = 0; i < parts.length; i++) {
        await gate(i);
        response.write(parts[i]);
      }
      response.end();
    })();
    return;
  }
  const { bytes, chunks, pauses, withLength } = bodies.get(id);
  response.writeHead(200, { "content-type": type, ...(withLength ? { "content-length": String(bytes.length) } : {}) });
  let at = 0;
  let k = 0;
  const pump = () => {
    while (at < bytes.length) {
      const end = Math.min(bytes.length, at + chunks[k % chunks.length]);
      const pause = pauses[k % pauses.length];
      k++;
      const more = response.write(bytes.subarray(at, end));
      at = end;
      if (!more) {
        response.once("drain", pump);
        return;
      }
      if (pause) {
        setImmediate(pump);
        return;
      }
    }
    response.end();
  };
  pump();
}

// Text full of the secret, fragments of it (12 bytes or more) in every spelling, escape soup and filler.
function leakyText(next, bytes) {
  const pick = (list) => list[Math.floor(next() * list.length)];
  const parts = [];
  let total = 0;
  while (total < bytes) {
    const roll = next();
    let part;
    if (roll < 0.25) {
      const from = Math.floor(next() * (SECRET.length - 12));
      const to = Math.min(SECRET.length, from + 12 + Math.floor(next() * SECRET.length));
      part = encoder.encode(pick(leakSpellings(next() < 0.4 ? SECRET : SECRET.slice(from, to))));
    } else if (roll < 0.4) {
      part = encoder.encode(Array.from({ length: 1 + Math.floor(next() * 40) }, () => pick([..."%&\\+#;xu0123456789abcdef/\"="])).join(""));
    } else {
      part = encoder.encode(Array.from({ length: 1 + Math.floor(next() * 400) }, () => String.fromCharCode(0x20 + Math.floor(next() * 95))).join(""));
    }
    parts.push(part);
    total += part.length;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

describe("the gateway's body relay in workerd (BYOB reads into one buffer)", () => {
  let server;
  let mf;
  let gateway;
  // Masking as the gateway does it, every position tried: to check that nothing is left to mask.
  const masker = secretMasker([SECRET, ADMIN_TOKEN], { scan: "js" });

  before(async () => {
    server = createServer(upstreamHandler);
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${server.address().port}`;
    const rule = [{ name: "relay", algorithm: "fixed-window", limit: 1_000_000, windowSec: 60, key: "ip" }];
    const upstream = (extra) => ({ url: `${origin}/up`, auth: { secret: "UP_TOKEN", header: "x-token" }, ...extra });
    const config = {
      routes: [
        { prefix: "/masked", methods: ["GET"], upstream: upstream({}), rules: rule },
        { prefix: "/never", methods: ["GET"], upstream: upstream({ maskBody: "never" }), rules: rule },
      ],
      admin: { path: "/admin/metrics", tokenSecret: "ADMIN_TOKEN" },
    };
    const worker = await workerOptions({
      name: "gw",
      entry: "gateway",
      bindings: { ADMIN_TOKEN, UP_TOKEN: SECRET, TEST_LIMITER_NOW: String(Date.UTC(2030, 0, 1, 0, 0, 10)) },
      extraModules: [configModule(config)],
    });
    // The gateway's log lines (one per request) are dropped.
    mf = new Miniflare({ workers: [worker], handleRuntimeStdio: (out, err) => (out.resume(), err.resume()) });
    gateway = await mf.getWorker("gw");
  });

  after(async () => {
    await mf?.dispose();
    await new Promise((resolve) => server.close(resolve));
  });

  const get = (path) => gateway.fetch(`https://gw.test${path}`, { headers: { "cf-connecting-ip": "192.0.2.1" } });

  for (const withLength of [false, true]) {
    test(`random chunkings and pauses${withLength ? ", with a Content-Length" : ", chunked"}: every byte the upstream's or masked, nothing left to mask`, async () => {
      const next = random(withLength ? 0x7e1a : 0x7e1b);
      let maskedBodies = 0;
      for (let trial = 0; trial < 12; trial++) {
        // Past WHOLE_BODY_BYTES (64 KiB) so that a body of known length is streamed too, and across
        // several of the relay's 64 KiB reads.
        const size = 70_000 + Math.floor(next() * 150_000);
        const bytes = leakyText(next, size);
        const largest = [40, 700, 5000, 70_000][trial % 4];
        const chunks = Array.from({ length: 64 }, () => 1 + Math.floor(next() * largest));
        const pauses = Array.from({ length: 7 }, () => next() < 0.3);
        const id = `b${withLength}${trial}`;
        bodies.set(id, { bytes, chunks, pauses, withLength });
        const response = await get(`/masked/x?id=${id}`);
        assert.equal(response.status, 200);
        const out = new Uint8Array(await response.arrayBuffer());
        assert.equal(out.length, bytes.length, `trial ${trial}: the whole body, no more`);
        let starred = 0;
        for (let i = 0; i < out.length; i++) {
          if (out[i] !== bytes[i]) {
            assert.equal(out[i], 0x2a, `trial ${trial}: byte ${i} is neither the upstream's nor the mask`);
            starred++;
          }
        }
        const again = out.slice();
        assert.equal(masker.bytes(again), false, `trial ${trial}: something left to mask (chunks up to ${largest} bytes)`);
        if (starred > 0) maskedBodies++;
      }
      assert.equal(maskedBodies, 12, "every body carried something to mask");
    });
  }

  test("bodies of a declared length up to 64 KiB (read whole, BYOB): every byte the upstream's or masked, nothing left to mask", async () => {
    const next = random(0x7e1d);
    for (let trial = 0; trial < 16; trial++) {
      const bytes = leakyText(next, 3000 + Math.floor(next() * 62_000));
      if (bytes.length > 65_536) continue;
      const largest = [40, 700, 5000, 70_000][trial % 4];
      const chunks = Array.from({ length: 64 }, () => 1 + Math.floor(next() * largest));
      const pauses = Array.from({ length: 5 }, () => next() < 0.4);
      const id = `whole${trial}`;
      bodies.set(id, { bytes, chunks, pauses, withLength: true });
      const response = await get(`/masked/x?id=${id}`);
      assert.equal(response.headers.get("content-length"), String(bytes.length));
      const out = new Uint8Array(await response.arrayBuffer());
      assert.equal(out.length, bytes.length, `trial ${trial}`);
      for (let i = 0; i < out.length; i++) if (out[i] !== bytes[i]) assert.equal(out[i], 0x2a, `trial ${trial}: byte ${i}`);
      assert.equal(masker.bytes(out.slice()), false, `trial ${trial}: something left to mask`);
      assert.notDeepEqual(out, bytes, `trial ${trial}: the body carried something to mask`);
    }
  });

  test("maskBody never: the body byte for byte, through the watchdog's relay", async () => {
    const next = random(0x7e1c);
    const bytes = Uint8Array.from({ length: 300_000 }, () => Math.floor(next() * 256));
    bodies.set("never", { bytes, chunks: [1, 4096, 700, 65536, 100_000], pauses: [false, true, false] });
    const out = new Uint8Array(await (await get("/never/x?id=never")).arrayBuffer());
    assert.deepEqual(out, bytes);
  });

  // The upstream writes part i only once `gate(i)` resolves: the test opens it when the client has
  // what it must have by then.
  function gatedStream(id, parts) {
    const opened = parts.map(() => Promise.withResolvers?.() ?? (() => { let resolve; const promise = new Promise((r) => (resolve = r)); return { promise, resolve }; })());
    opened[0].resolve();
    streams.set(id, { parts: parts.map((p) => encoder.encode(p)), gate: (i) => opened[i].promise });
    return (i) => opened[i].resolve();
  }

  async function readUntil(reader, received, count) {
    while (received.length < count) {
      const { done, value } = await reader.read();
      if (done) break;
      received.push(...value);
    }
    return received;
  }

  test("a chunk written alone reaches the client before the upstream writes the next (maskBody never)", { timeout: 30_000 }, async () => {
    const events = ["data: one\n\n", "data: two\n\n", "data: three\n\n"];
    const open = gatedStream("sse-never", events);
    const response = await get("/never/x?id=sse-never&type=text%2Fevent-stream");
    const reader = response.body.getReader();
    const received = [];
    let expected = "";
    for (let i = 0; i < events.length; i++) {
      expected += events[i];
      await readUntil(reader, received, expected.length);
      assert.equal(new TextDecoder().decode(Uint8Array.from(received)), expected, `event ${i} arrived alone, whole`);
      if (i + 1 < events.length) open(i + 1);
    }
    assert.equal((await reader.read()).done, true);
  });

  test("masked: a long chunk written alone reaches the client, less the tail held back for masking, before the next", { timeout: 30_000 }, async () => {
    // The masker holds back the last bytes that may begin a secret the next bytes complete (ten times
    // the longest secret): the rest of a chunk must go out at once.
    const first = `data: ${"a".repeat(4000)}\n\n`;
    const hold = secretMasker([SECRET, ADMIN_TOKEN]).stream().hold;
    const open = gatedStream("sse-masked", [first, `data: ${SECRET}\n\n`]);
    const response = await get("/masked/x?id=sse-masked&type=text%2Fevent-stream");
    const reader = response.body.getReader();
    const received = await readUntil(reader, [], first.length - hold);
    assert.equal(new TextDecoder().decode(Uint8Array.from(received)), first.slice(0, received.length));
    open(1);
    const rest = await readUntil(reader, received, first.length + SECRET.length + 8);
    const text = new TextDecoder().decode(Uint8Array.from(rest));
    assert.equal(text, `${first}data: ${"*".repeat(SECRET.length)}\n\n`);
  });
});
