// The gateway keyed by a verified JWT claim (`jwt:sub`, worker/src/http/jwt.js) on the durable store,
// three isolates on one Durable Object. The attack: tokens that claim alice's identity, signed by a key
// the configuration does not hold, or expired. They must never spend alice's budget, nor get one of
// their own: they share the one key of requests without a valid token. And alice, asking from every
// isolate at once, is admitted exactly her limit.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { validateConfig } from "../../worker/gateway/config.js";
import { startGatewayIsolates } from "./fixtures/gateway/isolates.js";

const LIMIT = 5;
const ADMIN_TOKEN = "admin-token-for-gateway-characteristics-0123";
const encoder = new TextEncoder();
const json64 = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
const rsaParams = { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" };

async function sign(privateKey, payload) {
  const head = `${json64({ alg: "RS256", typ: "JWT" })}.${json64(payload)}`;
  return `${head}.${Buffer.from(await crypto.subtle.sign({ name: "RSASSA-PKCS1-v1_5" }, privateKey, encoder.encode(head))).toString("base64url")}`;
}

let mf;
let isolates;
let issuer;
let impostor;
let upstreamCalls = 0;

before(async () => {
  issuer = await crypto.subtle.generateKey(rsaParams, true, ["sign", "verify"]);
  impostor = await crypto.subtle.generateKey(rsaParams, true, ["sign", "verify"]);
  const config = {
    routes: [
      {
        prefix: "/me",
        methods: ["GET"],
        upstream: { url: "http://svc.internal/me", service: "SVC" },
        // A day's window: the object's clock will not cross its end during the test.
        rules: [{ name: "per-user", algorithm: "sliding-log", limit: LIMIT, windowSec: 86_400, key: "jwt:sub", store: "durable" }],
      },
    ],
    stores: { durable: { fallback: [] } },
    jwt: { keys: [await crypto.subtle.exportKey("jwk", issuer.publicKey)], audience: "api" },
    admin: { path: "/_sluice/metrics", tokenSecret: "ADMIN_TOKEN" },
  };
  ({ mf, isolates } = await startGatewayIsolates({
    count: 3,
    config,
    adminToken: ADMIN_TOKEN,
    upstream: async () => {
      upstreamCalls++;
      return new Response("ok");
    },
    durableObjects: (i) => ({ SLUICE_DO: { className: "TestSluiceDurableObject", useSQLite: true, ...(i === 0 ? {} : { scriptName: "gw0" }) } }),
  }));
});
after(() => mf?.dispose());

const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;
const ask = (on, token, ip) => on.fetch("http://gateway.test/me", { headers: { authorization: `Bearer ${token}`, "cf-connecting-ip": ip } });

describe("gateway: a key from a verified JWT claim", () => {
  test("forged and expired tokens claiming alice share one budget and never touch hers; alice gets exactly her limit across three isolates", async () => {
    const forged = await sign(impostor.privateKey, { sub: "alice", aud: "api", exp: inAnHour() });
    const expired = await sign(issuer.privateKey, { sub: "alice", aud: "api", exp: Math.floor(Date.now() / 1000) - 10 });
    const otherAudience = await sign(issuer.privateKey, { sub: "alice", aud: "admin", exp: inAnHour() });
    const invalid = [];
    for (let i = 0; i < 9; i++) invalid.push((await ask(isolates[i % 3], [forged, expired, otherAudience][i % 3], `203.0.113.${i}`)).status);
    assert.deepEqual(invalid.filter((s) => s === 200).length, LIMIT, `requests without a valid token share one budget of ${LIMIT}: ${invalid}`);

    const alice = await sign(issuer.privateKey, { sub: "alice", aud: "api", exp: inAnHour() });
    const statuses = (await Promise.all(Array.from({ length: 15 }, (_, i) => ask(isolates[i % 3], alice, `198.51.100.${i}`)))).map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, LIMIT, `alice, from three isolates at once: exactly ${LIMIT} of 15 (${statuses})`);
    assert.equal(statuses.filter((s) => s === 429).length, 15 - LIMIT);

    const bob = await sign(issuer.privateKey, { sub: "bob", aud: "api", exp: inAnHour() });
    assert.equal((await ask(isolates[1], bob, "198.51.100.200")).status, 200, "another verified user has a budget of his own");
  });

  test("the configuration: a jwt:<claim> key needs the jwt settings, and they are checked with the library's messages", () => {
    const route = { prefix: "/me", methods: ["GET"], upstream: { url: "http://svc.internal/me", service: "SVC" }, rules: [{ name: "u", algorithm: "fixed-window", limit: 5, windowSec: 60, key: "jwt:sub" }] };
    assert.throws(() => validateConfig({ routes: [route] }), /routes\[0\]\.rules\[0\]\.key: keys by a JWT claim: the top-level `jwt` settings/);
    assert.throws(() => validateConfig({ routes: [route], jwt: { jwksUrl: "http://id.example/jwks" } }), /jwt\.jwksUrl: must be an https:\/\/ URL/);
    assert.throws(() => validateConfig({ routes: [route], jwt: { secret: "x".repeat(40) } }), /jwt\.secret: unknown field/);
    const bad = (key, message) => assert.throws(() => validateConfig({ routes: [{ ...route, rules: [{ ...route.rules[0], key }] }], jwt: { secretBinding: "JWT_SECRET" } }), message);
    bad("cf:city", /cf:<field> takes one of country/);
    bad("cookie:bad name", /cookie:<name> takes/);
    assert.deepEqual([...validateConfig({ routes: [{ ...route, rules: [{ ...route.rules[0], key: ["cf:country", "query:tenant", "cookie:sid", "jwt:sub"] }] }], jwt: { secretBinding: "JWT_SECRET" } }).routes[0].rules[0].key], ["cf:country", "query:tenant", "cookie:sid", "jwt:sub"]);
  });
});
