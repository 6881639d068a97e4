// A client that hangs up in the middle of the RESPONSE body is a client abort, counted as one
// (sluice_client_aborts_total) and logged as one ("client aborted", in a second line: the request's
// own line is written when the response starts), the same as a hang-up in the request body
// (gateway-client-abort.test.js); never a limiter error and never a body_timeout. Run in workerd in
// front of a Node HTTP upstream, on the streamed relay of a masked text body and of an unmasked one.
// Counts only: the sleeps give a timer that should not fire the time to.
//
// workerd learns that a client's connection closed only when it writes to it: a hang-up while every
// byte so far has been written and the upstream is silent reaches the Worker only with the next bytes.
// The last test pins that limit: such a silence, outlasting bodyTimeoutMs, is counted as the
// body_timeout it also is (the upstream did fall silent).
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, test } from "node:test";

import { startRelayGateway } from "./helpers/relay-gateway.js";

const ADMIN_TOKEN = "response-hangup-admin-token-0123456789abcdef";
const BOUND_MS = 200;
const piece = (length) => Buffer.alloc(length, 0x61);

function gate() {
  let open;
  const opened = new Promise((resolve) => (open = resolve));
  return { opened, open };
}

// The upstream writes 64 KiB, then, by the query: `then=more` 16 MiB at once (more than the sockets
// and streams between it and the client hold, so the relay always has bytes to write to a client that
// is gone, and is never left waiting on a silent upstream, however loaded the machine), `then=silence`
// nothing ever (the relay waits on the upstream). It reports how its response was closed.
let current = null;
function upstreamHandler(request, response) {
  const query = new URL(request.url, "http://upstream").searchParams;
  const state = current;
  response.writeHead(200, { "content-type": query.get("type") ?? "text/plain" });
  response.write(piece(64 * 1024));
  response.on("close", () => state.closed.open(response.writableFinished));
  if (query.get("then") === "more") for (let i = 0; i < 256; i++) response.write(piece(64 * 1024));
}

describe("a client that hangs up in the middle of the response, in workerd", () => {
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

  const counters = async (route) => ({
    clientAborts: await scrape(route, "sluice_client_aborts_total"),
    limiterErrors: await scrape(route, "sluice_limiter_errors_total"),
    bodyTimeouts: await scrape(route, "sluice_upstream_failures_total", { reason: "body_timeout" }),
  });

  for (const route of ["/masked", "/never"]) {
    {
      test(`${route}: hung up after the first bytes, the upstream sending 16 MiB more: one client abort, counted and logged, no limiter error, no body_timeout`, { timeout: 30_000 }, async () => {
        current = { closed: gate() };
        const before = await counters(route);
        const logsBefore = logLines.length;
        const response = await gateway.fetch(`https://gw.test${route}/x?then=more`, { headers: { "cf-connecting-ip": "192.0.2.43" } });
        assert.equal(response.status, 200);
        const reader = response.body.getReader();
        const { done, value } = await reader.read();
        assert.equal(done, false);
        assert.ok(value.byteLength > 0);
        await reader.cancel(new Error("the client hung up"));
        assert.equal(await current.closed.opened, false, "the upstream's response was cut off, not read to its end");
        // Time for a wrongly running watchdog to fire (three bounds) before counting.
        await sleep(3 * BOUND_MS);
        const now = await counters(route);
        assert.deepEqual(
          { clientAborts: now.clientAborts - before.clientAborts, limiterErrors: now.limiterErrors - before.limiterErrors, bodyTimeouts: now.bodyTimeouts - before.bodyTimeouts },
          { clientAborts: 1, limiterErrors: 0, bodyTimeouts: 0 },
        );
        // workerd's stdout reaches the test when it does: wait for the abort's line (the test's timeout
        // bounds the wait), then look at every line of the request.
        const linesOf = () => logLines.slice(logsBefore).map((line) => JSON.parse(line.slice(line.indexOf("{")))).filter((line) => line.route === route);
        while (!linesOf().some((line) => line.error === "client aborted")) await sleep(20);
        const lines = linesOf();
        assert.equal(lines.filter((line) => line.error === "client aborted").length, 1, JSON.stringify(lines));
        assert.equal(lines.filter((line) => /timeout|limiter/.test(line.error ?? "")).length, 0, JSON.stringify(lines));
      });
    }
  }

  test("workerd's limit: a hang-up while nothing is left to write, the upstream then silent past the bound, is not seen: the silence counts as body_timeout", { timeout: 30_000 }, async () => {
    current = { closed: gate() };
    const before = await counters("/masked");
    const response = await gateway.fetch("https://gw.test/masked/x?then=silence", { headers: { "cf-connecting-ip": "192.0.2.43" } });
    const reader = response.body.getReader();
    assert.equal((await reader.read()).done, false);
    await reader.cancel(new Error("the client hung up"));
    assert.equal(await current.closed.opened, false);
    const now = await counters("/masked");
    assert.deepEqual(
      { clientAborts: now.clientAborts - before.clientAborts, limiterErrors: now.limiterErrors - before.limiterErrors, bodyTimeouts: now.bodyTimeouts - before.bodyTimeouts },
      { clientAborts: 0, limiterErrors: 0, bodyTimeouts: 1 },
    );
  });
});
