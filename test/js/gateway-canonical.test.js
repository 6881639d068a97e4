// Issue 11 §1: a route's limit must not be dodged by spelling the path differently. The gateway
// chooses the route, the route's keys and the forwarded path on one canonical form (worker/src/http/paths.js),
// and the middleware's route() key uses the same form. Attacks first, then the form, then a seeded
// property test: random allowlisted paths x random legal re-spellings -> same route, same key, same
// forwarded URL.

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { random } from "../../bench/worker/workload.js"; // the bench's seeded PRNG (mulberry32)
import { validateConfig } from "../../worker/gateway/config.js";
import { createRouter } from "../../worker/gateway/routes.js";
import { upstreamTarget } from "../../worker/gateway/target.js";
import { route as routeKey } from "../../worker/src/http/keys.js";
import { canonicalPath, canonicalSegment, isPlainPath } from "../../worker/src/http/paths.js";
import { startGateway } from "./fixtures/gateway/harness.js";

const RULE = { algorithm: "fixed-window", windowSec: 60, key: "ip" };
// The shipped demo's shape: a lenient /api and a strict /api/checkout inside it.
const NESTED_CONFIG = {
  routes: [
    {
      prefix: "/api",
      methods: ["GET", "POST"],
      upstream: { url: "https://api.upstream.test/api" },
      rules: [{ name: "api", limit: 100, ...RULE }],
    },
    {
      prefix: "/api/checkout",
      methods: ["POST"],
      upstream: { url: "https://api.upstream.test/api/checkout" },
      rules: [{ name: "checkout", limit: 2, ...RULE }],
    },
  ],
};

describe("attacks on the running gateway", () => {
  let gateway;
  before(async () => {
    gateway = await startGateway({ bundledConfig: NESTED_CONFIG });
  });
  after(() => gateway.dispose());
  beforeEach(() => gateway.reset());

  const CLIENT = { "cf-connecting-ip": "203.0.113.9" };

  test("re-spelling /api/checkout (escapes, hex case, letter case) never escapes its limit of 2", async () => {
    const spellings = ["/api/%63heckout", "/api/checko%75t", "/api/%63%68%65%63%6B%6F%75%74", "/api/%63%68%65%63%6b%6f%75%74", "/API/CHECKOUT", "/Api/Checkout", "/api/checkout"];
    const statuses = [];
    for (const path of spellings) {
      const response = await gateway.raw(path, { method: "POST", headers: ["CF-Connecting-IP: 203.0.113.9"], body: "{}" });
      statuses.push(response.status);
    }
    assert.deepEqual(statuses, [200, 200, 429, 429, 429, 429, 429]);
    // What went through went to the strict route's upstream path, in canonical form.
    assert.deepEqual(gateway.upstream.map((seen) => seen.url), ["/api/checkout", "/api/checkout"]);
  });

  test("spellings an upstream reads as /api/checkout but the gateway cannot make canonical are refused (400, counted)", async () => {
    const probes = [
      "/api/checkout;jsessionid=abc",
      "/api/checkout%3Bx=1",
      "/api/checkout.",
      "/api/checkout%2E",
      "/api/checkout%20",
      "/api//checkout",
      "/api/x/..%2Fcheckout",
      "/api/check%00out",
      "/api/%c0%ae%c0%ae/checkout",
      "/api/%ff",
    ];
    for (const path of probes) {
      const response = await gateway.raw(path, { method: "POST", headers: ["CF-Connecting-IP: 203.0.113.10"], body: "{}" });
      assert.equal(response.status, 400, `${path}: ${response.body}`);
      assert.equal(JSON.parse(response.body).code, "sluice_bad_path", path);
    }
    assert.equal(gateway.upstream.length, 0);
    const metrics = await gateway.control("/metrics");
    assert.ok(metrics === null || typeof metrics === "object");
    const lines = await gateway.waitForLogs(probes.length);
    assert.equal(lines.filter((line) => line.status === 400 && /^path refused: /.test(line.error)).length, probes.length);
  });

  test("the lenient route forwards the canonical spelling it chose the route on", async () => {
    const response = await gateway.raw("/api/%6frders/%7e%61%c3%a9?x=%2F", { method: "GET", headers: ["CF-Connecting-IP: 203.0.113.11"] });
    assert.equal(response.status, 200);
    assert.equal(gateway.upstream[0].url, "/api/orders/~a%C3%A9?x=%2F");
  });
});

describe("the canonical form", () => {
  const cases = [
    ["/api/%63heckout", "/api/checkout"],
    ["/a/%7e%2D%2e%5F", "/a/~-._"],
    ["/a/%21%24%26%27%28%29%2A%2B%2C%3D%3A%40", "/a/!$&'()*+,=:@"],
    ["/caf%c3%a9", "/caf%C3%A9"],
    ["/a%20b", "/a%20b"],
    ["/100%25", "/100%25"],
    ["/a/", "/a/"],
    ["/MiXeD/Case", "/MiXeD/Case"],
    ["", ""],
  ];
  for (const [raw, canonical] of cases) {
    test(`${raw} -> ${canonical}`, () => assert.deepEqual(canonicalPath(raw), { path: canonical }));
  }
  const refused = [
    ["/a;b", /matrix/],
    ["/a%3bb", /matrix/],
    ["/a.", /dot or space/],
    ["/a%2e", /dot or space/],
    ["/a%20", /dot or space/],
    ["/%2e", /dot segment/],
    ["/a%2fb", /encoded slash/],
    ["/a%5cb", /encoded backslash/],
    ["/a%00", /control/],
    ["/a%7f", /control/],
    ["/%ff", /UTF-8/],
    ["/%252f", /double-encoded/],
    ["//a", /empty/],
    ["/a%ef%bc%8e", /normalises/],
  ];
  for (const [raw, problem] of refused) {
    test(`${raw} is refused`, () => assert.match(canonicalPath(raw).problem ?? "", problem));
  }
  test("is a fixed point: the canonical form of a canonical path is itself", () => {
    for (const [, canonical] of cases) assert.deepEqual(canonicalPath(canonical), { path: canonical });
  });
  // canonicalPath answers a path of plain segments with one test, without canonicalSegment: random
  // paths mixing plain segments with every kind that is not plain must get what the segments give.
  // upstreamTarget skips its URL parse for a plain path: the parse must keep every such target as it is.
  test("2000 random plain paths and queries: the target, built without a parse, is one the URL parser keeps", () => {
    const next = random(429);
    const literal = "abcXYZ019-._~!$&'()*+,=:@";
    const upstream = { origin: "https://api.example", basePath: "/v1/base" };
    let plain = 0;
    for (let n = 0; n < 2000; n++) {
      let path = "";
      const segments = 1 + Math.floor(next() * 4);
      for (let i = 0; i < segments; i++) {
        path += "/";
        const length = Math.floor(next() * 5);
        for (let j = 0; j < length; j++) path += literal[Math.floor(next() * literal.length)];
      }
      const search = next() < 0.5 ? "" : new URL(`https://x/?${path}#f`).search;
      const target = upstreamTarget(upstream, path, search);
      if (!isPlainPath(upstream.basePath + path)) continue;
      plain++;
      const parsed = new URL(/** @type {string} */ (target.url));
      assert.equal(parsed.origin, upstream.origin, path);
      assert.equal(parsed.pathname, upstream.basePath + path, path);
      assert.equal(parsed.search, search, path);
    }
    assert.ok(plain > 500, `only ${plain} plain paths drawn`);
  });
  test("2000 random paths: canonicalPath is each segment's canonicalSegment, joined (or the first refusal)", () => {
    const next = random(23);
    const pieces = ["a", "Z", "0", "-", ".", "_", "~", "!", "$", "&", "'", "(", "*", "+", ",", "=", ":", "@", ";", "%2e", "%41", "%2f", "%c3%a9", " ", "\u00e9", "\u212a", "%", ""];
    for (let n = 0; n < 2000; n++) {
      let path = "";
      const segments = 1 + Math.floor(next() * 4);
      for (let i = 0; i < segments; i++) {
        path += "/";
        const length = Math.floor(next() * 4);
        for (let j = 0; j < length; j++) path += pieces[Math.floor(next() * pieces.length)];
      }
      const raw = path.slice(1).split("/");
      let expected = /** @type {{ path: string } | { problem: string }} */ ({ path: "" });
      for (let i = 0; i < raw.length; i++) {
        const one = canonicalSegment(raw[i], i === raw.length - 1);
        if (one.problem !== undefined) {
          expected = { problem: one.problem };
          break;
        }
        expected = { path: `${/** @type {any} */ (expected).path}/${one.segment}` };
      }
      assert.deepEqual(canonicalPath(path), expected, JSON.stringify(path));
    }
  });
});

describe("configuration", () => {
  test("two prefixes that differ only in case are refused, naming the field", () => {
    const config = structuredClone(NESTED_CONFIG);
    config.routes[1].prefix = "/API";
    assert.throws(() => validateConfig(config), { name: "ConfigError", path: "routes[1].prefix" });
  });
  test("a prefix with a matrix parameter or a trailing dot is refused", () => {
    for (const prefix of ["/api;x", "/api."]) {
      const config = structuredClone(NESTED_CONFIG);
      config.routes[1].prefix = prefix;
      assert.throws(() => validateConfig(config), { name: "ConfigError", path: "routes[1].prefix" });
    }
  });
});

describe("property: random allowlisted paths x random legal re-spellings", () => {
  const next = random(0xca11);
  const int = (n) => Math.floor(next() * n);
  const UNRESERVED = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~";
  const LITERAL_PUNCTUATION = "!$&'()*+,=:@";
  const config = validateConfig({
    routes: ["/api", "/api/checkout", "/api/check", "/v1/geo", "/v1/geo/admin", "/files", "/a-b.c_d~e"].map((prefix, i) => ({
      prefix,
      methods: ["GET"],
      upstream: { url: `https://api.upstream.test/up${i}` },
      rules: [{ name: `r${i}`, limit: 5, ...RULE }],
    })),
  });
  const match = createRouter(config.routes);

  function randomSegment() {
    const alphabet = UNRESERVED + LITERAL_PUNCTUATION;
    let segment = "";
    const length = 1 + int(8);
    for (let i = 0; i < length; i++) segment += alphabet[int(alphabet.length)];
    // A segment of dots only, or ending in a dot, is refused by design: keep the generator to legal paths.
    return segment.endsWith(".") ? `${segment}x` : segment;
  }

  // A legal re-spelling: any character may be percent-encoded, in either hex case; the prefix's
  // letters may change case.
  function respell(path, prefixLength) {
    let out = "";
    for (let i = 0; i < path.length; i++) {
      const char = path[i];
      if (char === "/") {
        out += char;
        continue;
      }
      const roll = next();
      if (roll < 0.3) {
        const hex = char.charCodeAt(0).toString(16).padStart(2, "0");
        out += `%${next() < 0.5 ? hex.toUpperCase() : hex.toLowerCase()}`;
      } else if (roll < 0.5 && i < prefixLength) {
        out += next() < 0.5 ? char.toUpperCase() : char.toLowerCase();
      } else {
        out += char;
      }
    }
    return out;
  }

  test("1000 re-spellings choose the same route, the same keys and the same forwarded URL as the plain path", () => {
    for (let n = 0; n < 1000; n++) {
      const route = config.routes[int(config.routes.length)];
      const segments = Array.from({ length: int(4) }, randomSegment);
      const plain = route.prefix + segments.map((segment) => `/${segment}`).join("") + (next() < 0.2 ? "/" : "");
      const spelled = respell(plain, route.prefix.length);
      const what = `${plain} spelled ${spelled}`;

      const expected = canonicalPath(plain);
      const got = canonicalPath(spelled);
      assert.equal(got.problem, undefined, what);
      const chosen = match(got.path);
      const reference = match(expected.path);
      assert.equal(chosen.route.prefix, reference.route.prefix, what);
      // The gateway's route key part is the chosen route's prefix (gateway/limiter.js): equal routes, equal keys.
      assert.equal(routeKey(chosen.route.prefix)(), routeKey(reference.route.prefix)(), what);
      // The middleware's route() key of the request path.
      const key = routeKey();
      assert.equal(key(new Request(`https://app.test${spelled}`)), key(new Request(`https://app.test${plain}`)), what);
      // The forwarded URL: the configured base path (its own spelling) plus the canonical remainder.
      const url = (path) => upstreamTarget(route.upstream, match(canonicalPath(path).path).remainder, "").url;
      if (chosen.route === route) assert.equal(url(spelled), url(plain), what);
    }
  });
});
