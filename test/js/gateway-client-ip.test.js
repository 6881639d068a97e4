// Issue 23: the gateway's `ip` key part honours trustForwardedFor as the library's ip() does (the
// configuration's top-level `ip` block), for rate-limit rules and lockout's client alike; without it,
// X-Forwarded-For is ignored as before.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

const { ConfigError, validateConfig } = await import("../../worker/gateway/config.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");

let names = 0;
function gatewayWith(ip) {
  const raw = {
    routes: [
      {
        prefix: "/api",
        methods: ["GET"],
        upstream: { url: "https://api.internal/api", service: "UP" },
        rules: [{ name: `ip-${++names}`, algorithm: "fixed-window", limit: 1, windowSec: 60, key: "ip" }],
      },
      {
        prefix: "/login",
        methods: ["POST"],
        upstream: { url: "https://api.internal/login", service: "UP" },
        rules: [{ name: `lo-${++names}`, kind: "lockout", key: "body:username", store: "memory", maxFailures: 1, account: false }],
      },
    ],
  };
  if (ip !== undefined) raw.ip = ip;
  const gateway = createGateway(validateConfig(raw), { log() {} });
  const env = { UP: { fetch: (url) => new Response("no", { status: new URL(url).pathname === "/login" ? 401 : 200 }) } };
  const send = async (path, { peer, forwarded, body }) => {
    const headers = { "cf-connecting-ip": peer, "content-type": "application/json" };
    if (forwarded !== undefined) headers["x-forwarded-for"] = forwarded;
    const init = body === undefined ? { headers } : { method: "POST", headers, body };
    const response = await gateway.fetch(new Request(`https://gw.test${path}`, init), env, { waitUntil() {} });
    await response.arrayBuffer();
    return response.status;
  };
  return send;
}

describe("ip.trustForwardedFor", () => {
  test("one proxy trusted: clients behind one proxy address get a key each; one client via two proxy addresses, one key", async () => {
    const send = gatewayWith({ trustForwardedFor: 1 });
    assert.equal(await send("/api", { peer: "198.51.100.1", forwarded: "192.0.2.10" }), 200);
    assert.equal(await send("/api", { peer: "198.51.100.1", forwarded: "192.0.2.11" }), 200);
    assert.equal(await send("/api", { peer: "198.51.100.2", forwarded: "192.0.2.10" }), 429);
    // An entry the client wrote itself, left of the proxy's, is not believed.
    assert.equal(await send("/api", { peer: "198.51.100.1", forwarded: "203.0.113.99, 192.0.2.11" }), 429);
  });

  test("by CIDR: only a listed proxy is believed", async () => {
    const send = gatewayWith({ trustForwardedFor: ["198.51.100.0/24"] });
    assert.equal(await send("/api", { peer: "198.51.100.1", forwarded: "192.0.2.20" }), 200);
    assert.equal(await send("/api", { peer: "203.0.113.5", forwarded: "192.0.2.21" }), 200);
    assert.equal(await send("/api", { peer: "203.0.113.5", forwarded: "192.0.2.22" }), 429, "not a listed proxy: keyed by its own address");
  });

  test("not set: X-Forwarded-For is ignored", async () => {
    const send = gatewayWith(undefined);
    assert.equal(await send("/api", { peer: "198.51.100.1", forwarded: "192.0.2.30" }), 200);
    assert.equal(await send("/api", { peer: "198.51.100.1", forwarded: "192.0.2.31" }), 429);
  });

  test("lockout's client is the same address", async () => {
    const send = gatewayWith({ trustForwardedFor: 1 });
    const body = JSON.stringify({ username: "alice", password: "x" });
    assert.equal(await send("/login", { peer: "198.51.100.1", forwarded: "192.0.2.40", body }), 401);
    // Another client behind the same proxy is not locked by the first one's failure.
    assert.equal(await send("/login", { peer: "198.51.100.1", forwarded: "192.0.2.41", body }), 401);
    // The first client, via another proxy address, is.
    assert.equal(await send("/login", { peer: "198.51.100.2", forwarded: "192.0.2.40", body }), 429);
  });

  for (const [ip, field] of [
    [{ trustForwardedFor: "yes" }, "ip.trustForwardedFor"],
    [{ trustForwardedFor: ["not a cidr"] }, "ip.trustForwardedFor"],
    [{ ipv6Prefix: 0 }, "ip.ipv6Prefix"],
    [{ trust: 1 }, "ip.trust"],
    ["1", "ip"],
  ]) {
    test(`${JSON.stringify(ip)} is refused, naming ${field}`, () => {
      assert.throws(
        () => validateConfig({ ip, routes: [{ prefix: "/a", methods: ["GET"], upstream: { url: "https://a.internal/" }, rules: [{ name: "a", algorithm: "fixed-window", limit: 1, windowSec: 1, key: "ip" }] }] }),
        (error) => error instanceof ConfigError && error.path === field,
      );
    });
  }
});
