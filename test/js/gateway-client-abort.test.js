// Issue 23, honest failures: a client that hangs up in the middle of its request body is counted as a
// client abort (sluice_client_aborts_total, answered 499, logged "client aborted"), never as a limiter
// error, "limiter failed", or a 500/503 — so no one can trip a limiter alert by hanging up. The hang-up
// is the client's own input: a request body stream that errors after its first bytes.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

const { validateConfig } = await import("../../worker/gateway/config.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");
const { parseExposition, sample } = await import("./helpers/prometheus.js");

const ROUTES = [
  {
    prefix: "/login",
    methods: ["POST"],
    upstream: { url: "https://login.internal/login", service: "UP" },
    rules: [
      { name: "abort-login", algorithm: "fixed-window", limit: 100, windowSec: 60, key: "ip" },
      { name: "abort-lockout", kind: "lockout", key: "body:username", store: "memory" },
    ],
  },
  {
    prefix: "/upload",
    methods: ["POST"],
    upstream: { url: "https://files.internal/upload", service: "UP" },
    rules: [{ name: "abort-upload", algorithm: "fixed-window", limit: 100, windowSec: 60, key: "ip" }],
  },
];

function abortingBody() {
  const encoder = new TextEncoder();
  return new ReadableStream({
    pull(controller) {
      controller.enqueue(encoder.encode('{"username":"ali'));
      controller.error(new TypeError("the client went away"));
    },
  });
}

describe("a client that hangs up mid-body", () => {
  const lines = [];
  let forwarded = 0;
  const gateway = createGateway(validateConfig({ routes: ROUTES }), { log: (line) => lines.push(JSON.parse(line)) });
  const env = {
    UP: {
      fetch() {
        forwarded++;
        return new Response("ok");
      },
    },
  };

  for (const path of ["/login", "/upload"]) {
    test(`on ${path}: 499 sluice_client_aborted, counted as a client abort, never as a limiter error`, async () => {
      const before = lines.length;
      const request = new Request(`https://gw.test${path}`, {
        method: "POST",
        headers: { "cf-connecting-ip": "192.0.2.9", "content-type": "application/json" },
        body: abortingBody(),
        duplex: "half",
      });
      const response = await gateway.fetch(request, env, { waitUntil() {} });
      assert.equal(response.status, 499);
      assert.equal((await response.json()).code, "sluice_client_aborted");
      assert.equal(forwarded, 0);
      const [line] = lines.slice(before);
      assert.equal(line.error, "client aborted");
      assert.equal(line.status, 499);
      assert.equal(line.decision, "admitted", "the rate limits had admitted it");

      const families = parseExposition(gateway.metrics.toPrometheus());
      const index = ROUTES.findIndex((route) => route.prefix === path);
      assert.equal(sample(families, "sluice_client_aborts_total", { route: path }), 1);
      assert.equal(sample(families, "sluice_limiter_errors_total", { route: path }), 0);
      assert.equal(gateway.metrics.routes[index].limiterErrors, 0);
    });
  }
});
