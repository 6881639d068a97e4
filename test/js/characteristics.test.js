// Keys from request characteristics (worker/src/http/characteristics.js) and from verified JWT claims
// (worker/src/http/jwt.js). The attacker's tests come first: a token that is forged, unsigned,
// re-signed with another algorithm, expired, not yet valid, for another audience or issuer, oversized,
// or signed by an unknown key never keys a budget of its own; a client naming a cookie or parameter
// twice gets one shared key; a flood of unknown key ids cannot make the Worker fetch the JWKS on every
// request. Then each helper's keys, and the limiter counting a verified user apart from forgeries.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { SluiceConfigError } from "../../worker/src/engine/errors.js";
import { cf, cookie, query } from "../../worker/src/http/characteristics.js";
import { verifiedClaim } from "../../worker/src/http/jwt.js";
import { createLimiter, firstOf, ip } from "../../worker/src/sluice.js";

const NOW = Date.UTC(2030, 0, 1);
const clock = () => NOW;
const SECRET = "an-hs256-secret-of-more-than-thirty-two-characters";
const encoder = new TextEncoder();

const base64url = (bytes) => Buffer.from(bytes).toString("base64url");
const json64 = (value) => base64url(encoder.encode(JSON.stringify(value)));

async function hs256(payload, secret = SECRET, header = { alg: "HS256", typ: "JWT" }) {
  const head = `${json64(header)}.${json64(payload)}`;
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return `${head}.${base64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(head))))}`;
}

async function keyPair(alg) {
  const params = alg === "RS256" ? { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" } : { name: "ECDSA", namedCurve: "P-256" };
  const pair = await crypto.subtle.generateKey(params, true, ["sign", "verify"]);
  return { ...pair, jwk: await crypto.subtle.exportKey("jwk", pair.publicKey) };
}

async function signWith(pair, alg, payload, kid) {
  const head = `${json64({ alg, typ: "JWT", ...(kid === undefined ? {} : { kid }) })}.${json64(payload)}`;
  const algorithm = alg === "RS256" ? { name: "RSASSA-PKCS1-v1_5" } : { name: "ECDSA", hash: "SHA-256" };
  return `${head}.${base64url(new Uint8Array(await crypto.subtle.sign(algorithm, pair.privateKey, encoder.encode(head))))}`;
}

const claims = (extra = {}) => ({ sub: "alice", aud: "api", iss: "https://id.example", exp: NOW / 1000 + 600, ...extra });
const bearer = (token) => new Request("https://api.example/x", { headers: { authorization: `Bearer ${token}` } });

describe("verifiedClaim refuses every token it cannot trust", () => {
  const hsKey = verifiedClaim("sub", { secret: SECRET, audience: "api", issuer: "https://id.example", clock });

  test("a valid HS256 token keys by its claim", async () => {
    assert.equal(await hsKey(bearer(await hs256(claims()))), "jwt-sub:alice");
  });

  test("forged, unsigned, tampered, expired, early, foreign audience or issuer, no exp: nothing to say", async () => {
    const good = await hs256(claims());
    const [head, body] = good.split(".");
    const cases = {
      "alg none": `${json64({ alg: "none", typ: "JWT" })}.${body}.`,
      "another secret": await hs256(claims(), "another-secret-of-more-than-thirty-two-chars!"),
      "payload swapped after signing": `${head}.${json64(claims({ sub: "mallory" }))}.${good.split(".")[2]}`,
      expired: await hs256(claims({ exp: NOW / 1000 - 1 })),
      "not yet valid": await hs256(claims({ nbf: NOW / 1000 + 60 })),
      "another audience": await hs256(claims({ aud: "admin" })),
      "another issuer": await hs256(claims({ iss: "https://evil.example" })),
      "no exp": await hs256({ sub: "alice", aud: "api", iss: "https://id.example" }),
      "exp as a string": await hs256(claims({ exp: String(NOW / 1000 + 600) })),
      "two segments": `${head}.${body}`,
      "not base64url": `${head}.${body}.***`,
      oversized: await hs256(claims({ pad: "x".repeat(9000) })),
      "crit header": await hs256(claims(), SECRET, { alg: "HS256", crit: ["exp"] }),
    };
    for (const [name, token] of Object.entries(cases)) assert.equal(await hsKey(bearer(token)), undefined, name);
    assert.equal(await hsKey(new Request("https://api.example/x")), undefined, "no token");
    assert.equal(await hsKey(new Request("https://api.example/x", { headers: { authorization: `Bearer ${good} extra` } })), undefined, "a malformed header");
  });

  test("a public key never serves as an HMAC secret: an HS256 token signed with the RSA key's JWK text is refused", async () => {
    const rsa = await keyPair("RS256");
    const rsKey = verifiedClaim("sub", { keys: [rsa.jwk], audience: "api", clock });
    assert.equal(await rsKey(bearer(await signWith(rsa, "RS256", claims()))), "jwt-sub:alice");
    const confused = await hs256(claims(), JSON.stringify(rsa.jwk));
    assert.equal(await rsKey(bearer(confused)), undefined, "HS256 is not among the algorithms the keys allow");
    const both = verifiedClaim("sub", { keys: [rsa.jwk], secret: SECRET, audience: "api", clock });
    assert.equal(await both(bearer(confused)), undefined, "with both kinds, HS256 verifies with the secret only");
  });

  test("ES256 with a key id; a token for a kid not configured is refused; a JWK's private part is never imported", async () => {
    const ec = await keyPair("ES256");
    const other = await keyPair("ES256");
    const withPrivate = { ...(await crypto.subtle.exportKey("jwk", ec.privateKey)), kid: "k1" };
    const esKey = verifiedClaim("sub", { keys: [{ ...other.jwk, kid: "k0" }, withPrivate], algorithms: ["ES256"], audience: "api", clock });
    assert.equal(await esKey(bearer(await signWith(ec, "ES256", claims(), "k1"))), "jwt-sub:alice");
    assert.equal(await esKey(bearer(await signWith(ec, "ES256", claims(), "k9"))), undefined);
    assert.equal(await esKey(bearer(await signWith(ec, "ES256", claims(), "k0"))), undefined, "signed by another key than k0");
    const signedAsEs = (await signWith(ec, "ES256", claims(), "k1")).split(".");
    const relabelled = `${json64({ alg: "RS256", typ: "JWT", kid: "k1" })}.${signedAsEs[1]}.${signedAsEs[2]}`;
    assert.equal(await esKey(bearer(relabelled)), undefined, "an EC signature under an RS256 header");
  });

  test("a JWKS is fetched once, kept, and a flood of unknown kids refetches it at most once a minute", async () => {
    const rsa = await keyPair("RS256");
    let now = NOW;
    let fetches = 0;
    const jwksKey = verifiedClaim("sub", {
      jwksUrl: "https://id.example/.well-known/jwks.json",
      audience: "api",
      clock: () => now,
      fetch: async () => {
        fetches++;
        return Response.json({ keys: [{ ...rsa.jwk, kid: "live" }] });
      },
    });
    assert.equal(await jwksKey(bearer(await signWith(rsa, "RS256", claims(), "live"))), "jwt-sub:alice");
    for (let i = 0; i < 50; i++) assert.equal(await jwksKey(bearer(await signWith(rsa, "RS256", claims(), `random-${i}`))), undefined);
    assert.equal(fetches, 1, "unknown kids within a minute of the fetch: no refetch");
    now += 61_000;
    await jwksKey(bearer(await signWith(rsa, "RS256", claims({ exp: now / 1000 + 600 }), "random-x")));
    await jwksKey(bearer(await signWith(rsa, "RS256", claims({ exp: now / 1000 + 600 }), "random-y")));
    assert.equal(fetches, 2, "one refetch a minute at most");
  });

  test("a JWKS that cannot be fetched keeps the keys held; options are checked, naming the field", async () => {
    const rsa = await keyPair("RS256");
    let now = NOW;
    let up = true;
    const key = verifiedClaim("sub", { jwksUrl: "https://id.example/jwks", clock: () => now, jwksCacheMs: 1000, fetch: async () => (up ? Response.json({ keys: [rsa.jwk] }) : new Response("down", { status: 503 })) });
    const token = await signWith(rsa, "RS256", { sub: "bob", exp: NOW / 1000 + 600 });
    assert.equal(await key(bearer(token)), "jwt-sub:bob");
    up = false;
    now += 5000;
    assert.equal(await key(bearer(await signWith(rsa, "RS256", { sub: "carol", exp: NOW / 1000 + 600 }))), "jwt-sub:carol");
    const refused = (options, field) => assert.throws(() => verifiedClaim("sub", options), (error) => error instanceof SluiceConfigError && error.field === field);
    refused({}, "jwt");
    refused({ secret: "short" }, "jwt.secret");
    refused({ jwksUrl: "http://id.example/jwks" }, "jwt.jwksUrl");
    refused({ secret: SECRET, algorithms: ["none"] }, "jwt.algorithms");
    refused({ secret: SECRET, algorithms: ["RS256"] }, "jwt.algorithms");
    refused({ secret: SECRET, audience: [] }, "jwt.audience");
    refused({ secret: SECRET, leeway: 5 }, "jwt.leeway");
    assert.throws(() => verifiedClaim("sub claim", { secret: SECRET }), (error) => error.field === "verifiedClaim(claim)");
  });

  test("the HS256 secret can come from env (secretBinding), as a Worker secret does", async () => {
    const key = verifiedClaim("sub", { secretBinding: "JWT_SECRET", clock });
    const token = await hs256({ sub: "dave", exp: NOW / 1000 + 60 });
    assert.equal(await key(bearer(token), { JWT_SECRET: SECRET }), "jwt-sub:dave");
    assert.equal(await key(bearer(token), {}), undefined, "no secret bound: nothing verifies");
  });
});

describe("characteristics", () => {
  test("cf(): Cloudflare's fields; absent, nothing to say; an unknown field is a configuration error", () => {
    const request = { headers: new Headers(), url: "https://a.example/", cf: { country: "NZ", asn: 64500, colo: "AKL", botManagement: { score: 12, ja3Hash: "abc", ja4: "t13d|x" } } };
    assert.equal(cf("country")(/** @type {any} */ (request)), "cf-country:NZ");
    assert.equal(cf("asn")(/** @type {any} */ (request)), "cf-asn:64500");
    assert.equal(cf("botScore")(/** @type {any} */ (request)), "cf-botScore:12");
    assert.equal(cf("ja4")(/** @type {any} */ (request)), "cf-ja4:t13d%7Cx", "a '|' in a value cannot pass for a part separator");
    assert.equal(cf("ja3")(/** @type {any} */ ({ headers: new Headers(), cf: {} })), undefined);
    assert.equal(cf("country")(new Request("https://a.example/")), undefined, "a request without cf (a local run)");
    assert.throws(() => cf(/** @type {any} */ ("__proto__")), SluiceConfigError);
    assert.throws(() => cf(/** @type {any} */ ("city")), SluiceConfigError);
  });

  test("cookie() and query(): one value keys; a name sent twice shares one ambiguous key; escapes decode to one key", () => {
    const withCookie = (value) => new Request("https://a.example/", { headers: { cookie: value } });
    assert.equal(cookie("session")(withCookie("a=1; session=abc")), "cookie-session:abc");
    assert.equal(cookie("session")(withCookie("session=abc; session=xyz")), "cookie-session:!ambiguous");
    assert.equal(cookie("session")(withCookie("sessionx=abc")), undefined);
    assert.equal(query("tenant")(new Request("https://a.example/p?tenant=acme")), "query-tenant:acme");
    assert.equal(query("tenant")(new Request("https://a.example/p?tenant=%61cme")), "query-tenant:acme");
    assert.equal(query("tenant")(new Request("https://a.example/p?tenant=a&tenant=b")), "query-tenant:!ambiguous");
    assert.equal(query("tenant")(new Request("https://a.example/p")), undefined);
    assert.throws(() => cookie("bad name"), SluiceConfigError);
    assert.throws(() => query(""), SluiceConfigError);
  });

  test("with the limiter: forged tokens claiming alice are counted by address and never spend alice's budget", async () => {
    const limiter = createLimiter({ key: firstOf(verifiedClaim("sub", { secret: SECRET, clock }), ip()), limit: 3, windowSec: 60, clock });
    const forged = await hs256({ sub: "alice", exp: NOW / 1000 + 600 }, "not-the-secret-but-as-long-as-it-must-be!");
    const real = await hs256({ sub: "alice", exp: NOW / 1000 + 600 });
    const send = (token, address) => limiter.limit(new Request("https://a.example/", { headers: { authorization: `Bearer ${token}`, "cf-connecting-ip": address } }));
    const forgedDecisions = [];
    for (let i = 0; i < 5; i++) forgedDecisions.push((await send(forged, "203.0.113.9")).allowed);
    assert.deepEqual(forgedDecisions, [true, true, true, false, false], "the forger has its address's budget");
    const realDecisions = [];
    for (let i = 0; i < 4; i++) realDecisions.push((await send(real, "198.51.100.1")).allowed);
    assert.deepEqual(realDecisions, [true, true, true, false], "alice still has her whole budget");
  });
});
