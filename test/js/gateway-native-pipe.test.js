// Issue 23, a body that cannot carry a secret relayed at the bare Worker's rate: why a body under
// bodyTimeoutMs still costs a stream step per read (docs/gateway.md, "What it costs").
//
// The cheap way would be to let the runtime pipe the upstream's body into the client's stream natively
// (no JavaScript per chunk) for part of the bound, and, when a timer fires while the body is still
// going, stop that pipe and watch the rest with the BYOB relay. Stopping a pipe keeps both streams
// usable only if the runtime honours pipeTo's preventCancel and preventAbort when its signal aborts
// (the Streams standard says it must). workerd does not: both the upstream's body and the client's
// stream fail with the abort's reason, so the switch would cut off every body that lasts longer than
// the switch. Nor can a second native stream sit between them to take the blow: workerd refuses to
// pipe one IdentityTransformStream into another. These tests pin both facts in workerd (in front of a
// Node HTTP upstream, as a deployment reaches its API); each fails the day workerd changes, and the
// switch becomes possible. The relay that remains is tested in gateway-unmasked-relay.test.js.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import { Miniflare } from "miniflare";

const COMPATIBILITY_DATE = "2026-04-20"; // test/js/helpers/worker.js's

function gate() {
  let open;
  const opened = new Promise((resolve) => (open = resolve));
  return { opened, open };
}

// The upstream: /body writes FIRST bytes, then waits for `rest` before writing REST more and ending;
// /go answers once `go` is opened; /report takes the Worker's findings.
const FIRST = 1000;
const REST = 3000;
const pattern = (from, length) => Buffer.from(Array.from({ length }, (_, i) => (from + i) % 251));

describe("what workerd does when a native pipe is stopped", () => {
  let server;
  let origin;
  let mf;
  let worker;
  const gates = { go: gate(), rest: gate() };
  let report = gate();

  before(async () => {
    server = createServer((request, response) => {
      const path = new URL(request.url, "http://upstream").pathname;
      if (path === "/body") {
        response.writeHead(200, { "content-type": "image/webp" });
        response.write(pattern(0, FIRST));
        gates.rest.opened.then(() => response.end(pattern(FIRST, REST)));
      } else if (path === "/go") {
        gates.go.opened.then(() => response.end("go"));
      } else if (path === "/report") {
        const chunks = [];
        request.on("data", (chunk) => chunks.push(chunk));
        request.on("end", () => {
          report.open(JSON.parse(Buffer.concat(chunks).toString("utf8")));
          response.end();
        });
      } else {
        response.writeHead(404).end();
      }
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${server.address().port}`;
    // The Worker pipes the upstream's body natively into the client's stream, as the gateway would for
    // part of the bound; when the upstream's /go answers, it stops the pipe with preventCancel and
    // preventAbort, and reports whether each stream is still usable.
    const script = `
      const outcome = (promise, what) => promise.then(what, (error) => "failed: " + error.message);
      export default {
        async fetch(request, env, ctx) {
          const url = new URL(request.url);
          const origin = url.searchParams.get("origin");
          if (url.pathname === "/chain") {
            const first = new IdentityTransformStream();
            const second = new IdentityTransformStream();
            return new Response(await outcome(first.readable.pipeTo(second.writable), () => "piped"));
          }
          const upstream = await fetch(origin + "/body");
          const body = upstream.body;
          const { readable, writable } = new IdentityTransformStream();
          const stop = new AbortController();
          const piped = outcome(body.pipeTo(writable, { signal: stop.signal, preventCancel: true, preventAbort: true, preventClose: true }), () => "ended");
          ctx.waitUntil((async () => {
            await (await fetch(origin + "/go")).text();
            stop.abort(new Error("switch to the watched relay"));
            const found = { pipe: await piped, bodyLocked: body.locked, writableLocked: writable.locked };
            const reader = body.getReader();
            found.read = await outcome(reader.read(), ({ done, value }) => (done ? "done" : "read " + value.byteLength + " bytes"));
            const writer = writable.getWriter();
            found.write = await outcome(writer.write(new Uint8Array([1, 2, 3])), () => "written");
            await fetch(origin + "/report", { method: "POST", body: JSON.stringify(found) });
          })());
          return new Response(readable);
        },
      };`;
    mf = new Miniflare({ modules: true, script, compatibilityDate: COMPATIBILITY_DATE, handleRuntimeStdio: (out, err) => (out.resume(), err.resume()) });
    // A Worker's own fetch, not dispatchFetch: Miniflare's entry would hold the first bytes back.
    worker = await mf.getWorker();
  });

  after(async () => {
    gates.go.open();
    gates.rest.open();
    await mf?.dispose();
    await new Promise((resolve) => server.close(resolve));
  });

  test("an aborted pipe fails the upstream's body and the client's stream, whatever preventCancel and preventAbort say", { timeout: 30_000 }, async () => {
    const response = await worker.fetch(`http://worker/pipe?origin=${encodeURIComponent(origin)}`);
    const reader = response.body.getReader();
    const received = [];
    while (received.length < FIRST) {
      const { done, value } = await reader.read();
      assert.equal(done, false, "the first bytes arrive through the native pipe");
      received.push(...value);
    }
    assert.deepEqual(Buffer.from(received), pattern(0, FIRST));
    gates.go.open();
    const found = await report.opened;
    gates.rest.open();
    // Both streams are unlocked, as the standard says; but neither can be used any more.
    assert.equal(found.pipe, "failed: switch to the watched relay");
    assert.equal(found.bodyLocked, false);
    assert.equal(found.writableLocked, false);
    assert.equal(found.read, "failed: switch to the watched relay", "the upstream's body was cancelled despite preventCancel");
    assert.equal(found.write, "failed: switch to the watched relay", "the client's stream was aborted despite preventAbort");
    // And the client never gets the rest, however its response then ends (over HTTP/1.1 workerd ends
    // a chunked body cleanly even on an error: cloudflare/workerd#6818).
    let more = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        more += value.byteLength;
      }
    } catch {}
    assert.equal(more, 0);
  });

  test("a native stream cannot sit between the two: one IdentityTransformStream is not piped into another", async () => {
    const response = await worker.fetch(`http://worker/chain?origin=${encodeURIComponent(origin)}`);
    assert.match(await response.text(), /^failed: .*not implemented/);
  });
});
