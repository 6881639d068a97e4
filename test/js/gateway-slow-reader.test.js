// bodyTimeoutMs bounds the upstream's silences, never the client's (docs/gateway.md): a client that
// reads the response slowly, pausing longer than the bound between reads while the upstream has long
// sent everything, must receive every byte, and no body_timeout may be counted or logged. Run in
// workerd in front of a Node HTTP upstream, for a text body the gateway masks and for one it relays
// unmasked (maskBody "never"), each chunked and with a Content-Length. The assertions count bytes,
// metrics and log lines, never time: the pauses only give a timer that should not exist the chance
// to fire.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, test } from "node:test";

import { startRelayGateway } from "./helpers/relay-gateway.js";

const ADMIN_TOKEN = "slow-reader-admin-token-0123456789abcdef";
const BOUND_MS = 200;
const PAUSE_MS = 3 * BOUND_MS;
// More than the buffers between the gateway and the client hold (loopback sockets, workerd's and
// Node's streams), so a pausing client holds the relay up with bytes still to write, while the upstream
// has written the whole (one end() before the first byte reaches the client: any silence of the body
// from then on is the client's, passed back by backpressure). At 2 MB the
// client's buffers took everything and the test passed with a watchdog that counted the client's
// pauses as the upstream's silence (checked: answered() moved after the write); at 8 MB it fails so.
const BYTES = 8_000_000;
const text = (length) => {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) bytes[i] = 0x61 + (i % 26);
  return bytes;
};
const BODY = text(BYTES);

// The upstream writes the whole body at once.
let written = 0;
function upstreamHandler(request, response) {
  const query = new URL(request.url, "http://upstream").searchParams;
  response.writeHead(200, { "content-type": "text/plain", ...(query.get("length") === "1" ? { "content-length": String(BYTES) } : {}) });
  response.end(BODY);
  written++;
}

describe("a client that reads the response slowly, in workerd", () => {
  let relay;
  let gateway;
  let logLines;
  const scrape = (...args) => relay.scrape(...args);

  before(async () => {
    relay = await startRelayGateway({ handler: upstreamHandler, boundMs: BOUND_MS, adminToken: ADMIN_TOKEN });
    ({ gateway, logLines } = relay);
  });

  after(async () => {
    await relay?.close();
  });

  for (const route of ["/masked", "/never"]) {
    for (const withLength of [false, true]) {
      test(`${route}${withLength ? ", with a Content-Length" : ", chunked"}: pauses of ${PAUSE_MS} ms between reads under a bound of ${BOUND_MS} ms: every byte, no body_timeout counted or logged`, { timeout: 30_000 }, async () => {
        const timeoutsBefore = await scrape(route, "sluice_upstream_failures_total", { reason: "body_timeout" });
        const logsBefore = logLines.length;
        const writtenBefore = written;
        const response = await gateway.fetch(`https://gw.test${route}/x${withLength ? "?length=1" : ""}`, { headers: { "cf-connecting-ip": "192.0.2.41" } });
        assert.equal(response.status, 200);
        const reader = response.body.getReader();
        const chunks = [];
        let reads = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          chunks.push(Buffer.from(value));
          reads++;
          // The upstream has written its whole body by the time the client has its first bytes: from
          // then on only the client is slow. Three pauses, each longer than the bound.
          if (reads === 1) assert.equal(written - writtenBefore, 1);
          if (reads <= 3) await sleep(PAUSE_MS);
        }
        assert.ok(reads >= 2, "the body came in more than one read, so the client paused with bytes still to come");
        assert.ok(Buffer.concat(chunks).equals(BODY), "every byte, in order");
        assert.equal((await scrape(route, "sluice_upstream_failures_total", { reason: "body_timeout" })) - timeoutsBefore, 0);
        // Let a timer that should not exist run out before looking at the logs once more.
        await sleep(2 * BOUND_MS);
        const timeoutLines = logLines.slice(logsBefore).filter((line) => line.includes("upstream body timeout"));
        assert.deepEqual(timeoutLines, []);
        assert.equal((await scrape(route, "sluice_upstream_failures_total", { reason: "body_timeout" })) - timeoutsBefore, 0);
      });
    }
  }

  test("the log lines are read: a request's line reaches the test", async () => {
    // Without this a broken capture would let the no-timeout-logged assertion above pass vacuously.
    const before = logLines.length;
    const response = await gateway.fetch("https://gw.test/never/x", { headers: { "cf-connecting-ip": "192.0.2.42" } });
    await response.arrayBuffer();
    for (let i = 0; i < 50 && !logLines.slice(before).some((line) => line.includes('"/never"')); i++) await sleep(20);
    assert.ok(logLines.slice(before).some((line) => line.includes('"/never"')));
  });
});
