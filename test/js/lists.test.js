// Allow and deny lists (worker/src/features/lists/access-list.js), in the library and the gateway.
// The attacker's tests first: every spelling of a denied address is denied, X-Forwarded-For cannot
// move a client off the deny list or onto the allow list, and a list that cannot be read fails at
// start-up naming the entry.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Hono } from "hono";

import { SluiceConfigError } from "../../worker/src/engine/errors.js";
import { createAccessList } from "../../worker/src/features/lists/access-list.js";
import { accessList, ip, rateLimit } from "../../worker/src/hono.js";
import { validateConfig } from "../../worker/gateway/config.js";
import { parseExposition, sample } from "./helpers/prometheus.js";
import { startGatewayIsolates } from "./fixtures/gateway/isolates.js";

const request = (address, { cf, headers = {} } = {}) => {
  const r = new Request("https://api.example/x", { headers: { "cf-connecting-ip": address, ...headers } });
  if (cf !== undefined) Object.defineProperty(r, "cf", { value: cf });
  return r;
};

describe("the lists", () => {
  const list = createAccessList({
    deny: { ips: ["203.0.113.0/24", "2001:db8:bad::/48", "198.51.100.7"], countries: ["xx"], asns: [64496] },
    allow: { ips: ["203.0.113.10"], asns: [64500] },
  });

  test("every spelling of a denied address is denied: leading zeros, IPv4-mapped IPv6, upper-case hex, brackets and ports", () => {
    for (const spelling of ["203.0.113.99", "203.000.113.099", "::ffff:203.0.113.99", "::FFFF:CB00:7163", "[::ffff:203.0.113.99]:443", "2001:DB8:BAD:0:0:0:0:1", "2001:db8:bad::1", "[2001:db8:bad::1]", "198.51.100.7"]) {
      assert.deepEqual(list.match(request(spelling)), { list: "deny", by: "ip" }, spelling);
    }
    assert.deepEqual(list.match(request("198.51.100.8")), { list: null, by: null });
    assert.deepEqual(list.match(request("2001:db8:bae::1")), { list: null, by: null });
  });

  test("X-Forwarded-For and friends are never read: a denied client stays denied, a stranger is not allowed", () => {
    const spoofed = (address) => request(address, { headers: { "x-forwarded-for": "203.0.113.10", "x-real-ip": "203.0.113.10", "true-client-ip": "203.0.113.10" } });
    assert.deepEqual(list.match(spoofed("203.0.113.99")), { list: "deny", by: "ip" });
    assert.deepEqual(list.match(spoofed("192.0.2.1")), { list: null, by: null });
  });

  test("the allow list wins; countries (any case in the configuration) and ASNs match request.cf", () => {
    assert.deepEqual(list.match(request("203.0.113.10")), { list: "allow", by: "ip" }, "inside a denied block, but allowed by name");
    assert.deepEqual(list.match(request("192.0.2.1", { cf: { country: "XX", asn: 1 } })), { list: "deny", by: "country" });
    assert.deepEqual(list.match(request("192.0.2.1", { cf: { country: "NZ", asn: 64496 } })), { list: "deny", by: "asn" });
    assert.deepEqual(list.match(request("192.0.2.1", { cf: { country: "XX", asn: 64500 } })), { list: "allow", by: "asn" });
    assert.deepEqual(list.match(request("192.0.2.1")), { list: null, by: null }, "no cf: no country or ASN match");
  });

  test("a bad entry fails when the list is built, naming it", () => {
    const refused = (options, field) => assert.throws(() => createAccessList(options), (error) => error instanceof SluiceConfigError && error.field === field);
    refused({ deny: { ips: ["10.0.0.0/8", "10.0.0.0/33"] } }, "deny.ips[1]");
    refused({ deny: { ips: ["not-an-address"] } }, "deny.ips[0]");
    refused({ allow: { countries: ["NZL"] } }, "allow.countries[0]");
    refused({ deny: { asns: [-1] } }, "deny.asns[0]");
    refused({ deny: { cidrs: [] } }, "deny.cidrs");
    refused({ block: {} }, "block");
  });

  test("accessList() in Hono: 403 for the deny list; the allow list can skip a rate limit", async () => {
    const app = new Hono();
    app.use("*", accessList({ deny: { ips: ["203.0.113.0/24"] }, allow: { ips: ["192.0.2.50"] } }));
    app.use("*", rateLimit({ key: ip(), limit: 1, windowSec: 60, skip: (c) => c.get("accessList")?.list === "allow" }));
    app.get("/x", (c) => c.text("ok"));
    const get = (address) => app.request("/x", { headers: { "cf-connecting-ip": address } });
    assert.equal((await get("203.0.113.4")).status, 403);
    assert.deepEqual([(await get("192.0.2.1")).status, (await get("192.0.2.1")).status], [200, 429]);
    assert.deepEqual([(await get("192.0.2.50")).status, (await get("192.0.2.50")).status, (await get("192.0.2.50")).status], [200, 200, 200]);
  });
});

describe("the lists in the gateway", () => {
  const ADMIN_TOKEN = "admin-token-for-gateway-lists-0123456789";
  let mf;
  let isolates;
  let upstreamCalls = 0;
  before(async () => {
    ({ mf, isolates } = await startGatewayIsolates({
      count: 1,
      config: {
        routes: [{ prefix: "/x", methods: ["GET"], upstream: { url: "http://svc.internal/x", service: "SVC" }, rules: [{ name: "x", algorithm: "fixed-window", limit: 1, windowSec: 60, key: "ip" }] }],
        lists: { deny: { ips: ["203.0.113.0/24"] }, allow: { ips: ["192.0.2.50"] } },
        admin: { path: "/_sluice/metrics", tokenSecret: "ADMIN_TOKEN" },
      },
      adminToken: ADMIN_TOKEN,
      upstream: async () => {
        upstreamCalls++;
        return new Response("ok");
      },
    }));
  });
  after(() => mf?.dispose());

  test("the deny list is refused with 403 before anything is counted or forwarded; the allow list skips the rules; both are counted", async () => {
    const get = (address, headers = {}) => isolates[0].fetch("http://gateway.test/x", { headers: { "cf-connecting-ip": address, ...headers } });
    const denied = await get("::ffff:203.0.113.9", { "x-forwarded-for": "192.0.2.50" });
    assert.equal(denied.status, 403);
    assert.equal((await denied.json()).code, "sluice_denied");
    assert.equal(upstreamCalls, 0);
    assert.deepEqual([(await get("192.0.2.50")).status, (await get("192.0.2.50")).status], [200, 200], "the allow list skips the limit of 1");
    assert.deepEqual([(await get("192.0.2.1")).status, (await get("192.0.2.1")).status], [200, 429]);
    const metrics = parseExposition(await (await isolates[0].fetch("http://gateway.test/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text());
    assert.equal(sample(metrics, "sluice_refused_total", { code: "sluice_denied" }), 1);
    assert.equal(sample(metrics, "sluice_list_allowed_total", { route: "/x" }), 2);
  });

  test("a bad list fails the configuration, naming the entry", () => {
    const route = { prefix: "/x", methods: ["GET"], upstream: { url: "http://svc.internal/x", service: "SVC" }, rules: [{ name: "x", algorithm: "fixed-window", limit: 1, windowSec: 60, key: "ip" }] };
    assert.throws(() => validateConfig({ routes: [route], lists: { deny: { ips: ["10.0.0.1/40"] } } }), /lists\.deny\.ips\[0\]: /);
    assert.throws(() => validateConfig({ routes: [route], lists: { allow: { countries: ["new zealand"] } } }), /lists\.allow\.countries\[0\]: must be a two-letter country code/);
  });
});
