// Issue 23, a small proxied request at a tenth of today's CPU: a body that must be masked and announces
// a Content-Length up to 64 KiB (WHOLE_BODY_BYTES) is read whole in one runtime step. Its bound is then
// on the whole read, not on a silence: such a body must arrive whole within bodyTimeoutMs of its head.
// These tests run the real gateway in workerd in front of an upstream that writes raw HTTP/1.1 bytes
// (a Node TCP server: exact lengths, no framing added), and attack the bound and the length:
//   - a body that stalls mid-way, and one that trickles without ever falling silent for the bound but
//     takes longer than it in all, are cut: the client sees the announced length and fewer bytes, and
//     the cut is counted once as body_timeout;
//   - a body exactly at 64 KiB is read whole (so trickling it is cut), one of 64 KiB + 1 is streamed
//     (trickling it is not: only a silence is bounded there), both masked byte for byte;
//   - an upstream sending more bytes than its Content-Length gives the client exactly the announced
//     bytes, masked; one sending fewer and closing gives the client a body that ends short, never one
//     that passes for complete, and is not counted as a body timeout.
// No timing is asserted: the trickles last twice the bound or more (a late timer still cuts them), and
// their gaps are a fifth of it.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { Miniflare } from "miniflare";

import { WHOLE_BODY_BYTES } from "../../worker/gateway/response-body.js";
import { configModule, workerOptions } from "./helpers/worker.js";

const SECRET = "whole-body-upstream-secret/+=7f3a9c1e5b2d4f60a8e1";
const ADMIN_TOKEN = "whole-admin-token-0123456789abcdef0123456789";
const BOUND_MS = 1000;
const GAP_MS = 200;
const PIECES = 12; // 11 gaps of 200 ms: 2.2 s in all, more than twice the bound

// `length` bytes of text with the secret in it every few hundred bytes.
function leakyText(length) {
  const unit = `{"note":"${"x".repeat(150)}","token":"${SECRET}"}\n`;
  return Buffer.from(unit.repeat(Math.ceil(length / unit.length)).slice(0, length));
}

const held = new Set();
function upstreamConnection(socket) {
  held.add(socket);
  socket.on("close", () => held.delete(socket));
  socket.on("error", () => {});
  let request = "";
  socket.on("data", (data) => {
    request += data;
    if (!request.includes("\r\n\r\n")) return;
    const url = new URL(request.split(" ")[1], "http://upstream");
    request = "";
    const length = Number(url.searchParams.get("length"));
    const head = (announced) => `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${announced}\r\nconnection: close\r\n\r\n`;
    const body = leakyText(length);
    const what = url.pathname.split("/").pop();
    if (what === "stall") {
      // The head and 100 bytes, then nothing: the socket stays open until the test ends.
      socket.write(head(length));
      socket.write(body.subarray(0, 100));
    } else if (what === "trickle") {
      // Never silent for the bound, yet the whole body takes more than twice the bound.
      socket.write(head(length));
      const piece = Math.ceil(length / PIECES);
      let at = 0;
      const timer = setInterval(() => {
        socket.write(body.subarray(at, at + piece));
        at += piece;
        if (at >= length) {
          clearInterval(timer);
          socket.end();
        }
      }, GAP_MS);
      socket.on("close", () => clearInterval(timer));
    } else if (what === "long") {
      // Announces `length`, sends 500 bytes more (a secret among them), then closes.
      socket.end(Buffer.concat([Buffer.from(head(length)), leakyText(length + 500)]));
    } else if (what === "short") {
      // Announces `length`, sends 300 bytes fewer, then closes.
      socket.end(Buffer.concat([Buffer.from(head(length)), body.subarray(0, length - 300)]));
    } else {
      socket.end(Buffer.concat([Buffer.from(head(length)), body]));
    }
  });
}

describe("a small masked body read whole: its bound and its length", () => {
  let upstream;
  let mf;
  let origin;

  before(async () => {
    upstream = net.createServer(upstreamConnection);
    await new Promise((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const rule = [{ name: "whole", algorithm: "fixed-window", limit: 1_000_000, windowSec: 60, key: "ip" }];
    const config = {
      routes: [
        {
          prefix: "/masked",
          methods: ["GET"],
          upstream: { url: `http://127.0.0.1:${upstream.address().port}/up`, auth: { secret: "UP_TOKEN", header: "x-token" }, timeoutMs: 10_000, bodyTimeoutMs: BOUND_MS },
          rules: rule,
        },
      ],
      admin: { path: "/admin/metrics", tokenSecret: "ADMIN_TOKEN" },
    };
    const worker = await workerOptions({
      name: "gw",
      entry: "gateway",
      bindings: { ADMIN_TOKEN, UP_TOKEN: SECRET, TEST_LIMITER_NOW: String(Date.UTC(2030, 0, 1, 0, 0, 10)) },
      extraModules: [configModule(config)],
    });
    mf = new Miniflare({ workers: [worker], handleRuntimeStdio: (out, err) => (out.resume(), err.resume()) });
    origin = await mf.ready;
  });

  after(async () => {
    for (const socket of held) socket.destroy();
    await mf?.dispose();
    await new Promise((resolve) => upstream.close(resolve));
  });

  // The response as a raw HTTP/1.1 client sees it: the head, and the body bytes up to its
  // Content-Length, or every byte until the gateway's side closes the connection when fewer come
  // (workerd may hold a connection open a while after a complete response, Connection: close or not).
  function raw(path) {
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(origin.port), origin.hostname, () => {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: gw.test\r\nCF-Connecting-IP: 192.0.2.1\r\nConnection: close\r\n\r\n`);
      });
      const chunks = [];
      const parse = () => {
        const data = Buffer.concat(chunks);
        const split = data.indexOf("\r\n\r\n");
        if (split < 0) return null;
        const head = data.subarray(0, split).toString("latin1");
        const length = /\r\ncontent-length: *(\d+)/i.exec(head);
        return { head, status: Number(head.split(" ")[1]), announced: length === null ? null : Number(length[1]), body: data.subarray(split + 4) };
      };
      socket.on("data", (chunk) => {
        chunks.push(chunk);
        const response = parse();
        if (response !== null && response.announced !== null && response.body.length >= response.announced) {
          socket.destroy();
          resolve(response);
        }
      });
      socket.on("error", reject);
      socket.on("close", () => resolve(parse() ?? { head: "", status: 0, announced: null, body: Buffer.alloc(0) }));
    });
  }

  async function bodyTimeouts() {
    const response = await mf.dispatchFetch(`${origin.origin}/admin/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const match = /sluice_upstream_failures_total\{route="\/masked",reason="body_timeout"\} (\d+)/.exec(await response.text());
    return match === null ? 0 : Number(match[1]);
  }

  // Every byte the upstream's or the mask's, and no secret left.
  function assertMasked(body, length, what) {
    const original = leakyText(length);
    assert.equal(body.length, length, `${what}: the whole body`);
    for (let i = 0; i < length; i++) if (body[i] !== original[i]) assert.equal(body[i], 0x2a, `${what}: byte ${i}`);
    assert.ok(!body.toString("latin1").includes(SECRET.slice(0, 12)), `${what}: a secret left`);
    assert.ok(body.includes("*".repeat(12)), `${what}: nothing was masked`);
  }

  test("a body that stalls mid-way is cut: the client sees its Content-Length and fewer bytes; one body_timeout", async () => {
    const before = await bodyTimeouts();
    const response = await raw("/masked/stall?length=2000");
    assert.equal(response.status, 200);
    assert.equal(response.announced, 2000, response.head);
    assert.ok(response.body.length < 2000, `${response.body.length} bytes`);
    assert.ok(!response.body.toString("latin1").includes(SECRET.slice(0, 12)));
    assert.equal((await bodyTimeouts()) - before, 1);
  });

  for (const length of [2000, WHOLE_BODY_BYTES]) {
    test(`a body of ${length} bytes that trickles, never silent for the bound but slower than it in all, is cut; one body_timeout`, async () => {
      const before = await bodyTimeouts();
      const response = await raw(`/masked/trickle?length=${length}`);
      assert.equal(response.status, 200);
      assert.equal(response.announced, length, response.head);
      assert.ok(response.body.length < length, `${response.body.length} bytes of ${length}`);
      assert.equal((await bodyTimeouts()) - before, 1);
    });
  }

  test("a body of 64 KiB + 1 is streamed: trickling it is never cut (only a silence is bounded there), and it is masked", async () => {
    const length = WHOLE_BODY_BYTES + 1;
    const before = await bodyTimeouts();
    const response = await raw(`/masked/trickle?length=${length}`);
    assert.equal(response.announced, length, response.head);
    assertMasked(response.body, length, "64 KiB + 1, trickled");
    assert.equal((await bodyTimeouts()) - before, 0);
  });

  for (const length of [WHOLE_BODY_BYTES, WHOLE_BODY_BYTES + 1]) {
    test(`a body of ${length} bytes sent at once: whole, at its Content-Length, masked`, async () => {
      const response = await raw(`/masked/at-once?length=${length}`);
      assert.equal(response.announced, length, response.head);
      assertMasked(response.body, length, `${length} at once`);
    });
  }

  test("more bytes than the Content-Length: the client gets exactly the announced bytes, masked", async () => {
    const response = await raw("/masked/long?length=3000");
    assert.equal(response.status, 200);
    assert.equal(response.announced, 3000, response.head);
    assertMasked(response.body, 3000, "longer than announced");
  });

  test("fewer bytes than the Content-Length, then the connection closed: the client's body ends short, not a body timeout", async () => {
    const before = await bodyTimeouts();
    const response = await raw("/masked/short?length=3000");
    assert.equal(response.announced, 3000, response.head);
    assert.ok(response.body.length < 3000, `${response.body.length} bytes`);
    assert.ok(!response.body.toString("latin1").includes(SECRET.slice(0, 12)));
    assert.equal((await bodyTimeouts()) - before, 0);
  });
});
