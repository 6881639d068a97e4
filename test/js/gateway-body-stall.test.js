// Issue 23, honest failures: an upstream body cut off after bodyTimeoutMs must not pass for complete.
// What the gateway controls is its response's body stream: it must end in an error (never a clean
// end), with or without masking, and whether or not the upstream announced a length. How the runtime
// then tells the client is the platform's (docs/gateway.md: under Miniflare 4 a raw HTTP/1.1 client
// still sees a chunked body end with its last chunk; a body with a Content-Length ends short of it).
import assert from "node:assert/strict";
import { describe, test } from "node:test";

const { proxyRequest } = await import("../../worker/gateway/proxy.js");
const { UpstreamBodyStalled } = await import("../../worker/gateway/body-watchdog.js");
const { secretMasker } = await import("../../worker/gateway/redact.js");

const SECRET = "upstream-credential-0123456789abcdef";

// An upstream that sends its head and `first`, then nothing, ever (the stream stays open).
function stallingUpstream(first, headers = {}) {
  return {
    fetch: () =>
      new Response(
        new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(first));
          },
        }),
        { status: 200, headers },
      ),
  };
}

const upstream = (bodyTimeoutMs) => ({
  service: "UP",
  auth: null,
  timeoutMs: 10_000,
  bodyTimeoutMs,
  forwardHeaders: [],
  stripHeaders: [],
  clientIpHeader: null,
  cacheControl: "upstream",
});

async function drain(body) {
  const reader = body.getReader();
  const chunks = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

describe("a body that stalls after bodyTimeoutMs", () => {
  for (const [what, mask] of [
    ["masked", secretMasker([SECRET])],
    ["with no secret to mask", secretMasker([])],
  ]) {
    for (const headers of [{}, { "content-length": "1000" }]) {
      test(`${what}, ${headers["content-length"] ? "of a declared length" : "chunked"}: the client's body ends in an error, never cleanly`, async () => {
        let stalls = 0;
        const result = await proxyRequest({
          method: "GET",
          headers: new Headers(),
          body: undefined,
          targetUrl: "https://up.internal/x",
          upstream: upstream(20),
          env: { UP: stallingUpstream("first chunk of a body that never ends\n", headers) },
          secret: null,
          mask,
          now: () => 0,
          onBodyStall: () => stalls++,
        });
        assert.equal(result.response.status, 200);
        await assert.rejects(drain(result.response.body), (error) => error instanceof UpstreamBodyStalled);
        assert.equal(stalls, 1);
      });
    }
  }
});
