// The upstream target can never leave the configured host or climb above its base path. First the
// pure functions (routes.js, target.js), then the same attempts against the running gateway,
// checking that nothing refused ever reaches the fake upstream.

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { createRouter } from "../../worker/gateway/routes.js";
import { segmentProblem, upstreamTarget } from "../../worker/gateway/target.js";
import { startGateway } from "./fixtures/gateway/harness.js";

const UPSTREAM = { origin: "https://api.example.com", basePath: "/v2/geo" };
const target = (remainder, search = "") => upstreamTarget(UPSTREAM, remainder, search);

describe("routes match whole segments, the longest prefix first", () => {
  const match = createRouter([{ prefix: "/v1" }, { prefix: "/v1/geo" }, { prefix: "/v1/geo/admin" }]);

  const cases = [
    ["/v1/geo", "/v1/geo", ""],
    ["/v1/geo/", "/v1/geo", "/"],
    ["/v1/geo/x/y", "/v1/geo", "/x/y"],
    ["/v1/geo/admin/x", "/v1/geo/admin", "/x"],
    ["/v1/geography", "/v1", "/geography"],
    ["/v1/geo@evil.example/x", "/v1", "/geo@evil.example/x"],
    ["/v1", "/v1", ""],
  ];
  for (const [path, prefix, remainder] of cases) {
    test(`${path} -> ${prefix} + ${JSON.stringify(remainder)}`, () => {
      const found = match(path);
      assert.equal(found.route.prefix, prefix);
      assert.equal(found.remainder, remainder);
    });
  }

  test("no match: null; a root route takes everything", () => {
    assert.equal(match("/v2/x"), null);
    assert.equal(match("/v10"), null);
    assert.equal(createRouter([{ prefix: "/" }])("//evil.example/x").remainder, "//evil.example/x");
  });
});

describe("safe remainders are appended to the upstream's base path", () => {
  const cases = [
    ["", "", "https://api.example.com/v2/geo"],
    ["/", "", "https://api.example.com/v2/geo/"],
    ["/cities/paris", "?lang=fr&q=a%2Fb", "https://api.example.com/v2/geo/cities/paris?lang=fr&q=a%2Fb"],
    ["/caf%C3%A9", "", "https://api.example.com/v2/geo/caf%C3%A9"],
    ["/a.b/..c/...d", "", "https://api.example.com/v2/geo/a.b/..c/...d"],
    // Canonical form (paths.js): escapes of characters a path may hold as they are are decoded, others
    // keep their escape with upper-case hex.
    ["/a%2eb", "", "https://api.example.com/v2/geo/a.b"],
    ["/%63ity%7e%21", "", "https://api.example.com/v2/geo/city~!"],
    ["/caf%c3%a9%20x", "", "https://api.example.com/v2/geo/caf%C3%A9%20x"],
    ["/100%25", "", "https://api.example.com/v2/geo/100%25"],
    ["/@evil.example", "", "https://api.example.com/v2/geo/@evil.example"],
    ["/http:evil.example", "", "https://api.example.com/v2/geo/http:evil.example"],
  ];
  for (const [remainder, search, url] of cases) {
    test(`${JSON.stringify(remainder + search)} -> ${url}`, () => {
      assert.deepEqual(target(remainder, search), { url });
      assert.equal(new URL(url).host, "api.example.com");
    });
  }

  test("with no base path, the remainder is the whole path", () => {
    assert.deepEqual(upstreamTarget({ origin: "https://api.example.com", basePath: "" }, "", ""), { url: "https://api.example.com/" });
    assert.deepEqual(upstreamTarget({ origin: "https://api.example.com", basePath: "" }, "/x", "?a"), { url: "https://api.example.com/x?a" });
  });
});

describe("every traversal and host-escape attempt is refused", () => {
  const attempts = [
    ["//evil.example/x", /empty path segment/],
    ["/a//b", /empty path segment/],
    ["/https://evil.example/x", /empty path segment/],
    ["/https:%2f%2fevil.example", /encoded slash/],
    ["/..", /dot segment/],
    ["/.", /dot segment/],
    ["/a/../../admin", /dot segment/],
    ["/%2e%2e", /dot segment/],
    ["/%2E%2e/admin", /dot segment/],
    ["/.%2e", /dot segment/],
    ["/..%2fadmin", /encoded slash/],
    ["/..%2Fadmin", /encoded slash/],
    ["/%2e%2e%2fadmin", /encoded slash/],
    ["/..%5cadmin", /encoded backslash/],
    ["/a\\..\\admin", /not allowed/],
    ["/%252e%252e/admin", /double-encoded/],
    ["/%252fadmin", /double-encoded/],
    ["/..%255cadmin", /double-encoded/],
    ["/..;/admin", /dot segment/],
    ["/..;jsessionid=x", /dot segment/],
    ["/%2e%2e;/admin", /dot segment/],
    ["/%c0%ae%c0%ae/admin", /not valid UTF-8/],
    ["/%c0%af", /not valid UTF-8/],
    ["/%e0%80%ae", /not valid UTF-8/],
    ["/%ef%bc%8e%ef%bc%8e", /normalises to a slash or dot/],
    ["/a%ef%bc%8fb", /normalises to a slash or dot/],
    ["/%00", /control character/],
    ["/a%0d%0aHost:%20evil", /control character/],
    ["/%", /malformed percent-escape/],
    ["/%zz", /malformed percent-escape/],
    ["/a%2", /malformed percent-escape/],
    ["/a b", /not allowed/],
    ["/a|b", /not allowed/],
    ["/é", /not allowed/],
    ["x", /does not start with/],
  ];
  for (const [remainder, problem] of attempts) {
    test(JSON.stringify(remainder), () => {
      const result = target(remainder);
      assert.equal(result.url, undefined, `forwarded to ${result.url}`);
      assert.match(result.problem, problem);
    });
  }

  test("a trailing empty segment is allowed, an inner one not", () => {
    assert.equal(segmentProblem("", true), null);
    assert.match(segmentProblem("", false), /empty/);
  });
});

describe("through the running gateway", () => {
  let gateway;
  before(async () => {
    gateway = await startGateway();
  });
  after(() => gateway.dispose());
  beforeEach(() => gateway.reset());

  test("unlisted prefixes get 404 and never reach the upstream", async () => {
    for (const path of ["/", "/v1", "/v1/geography", "/v1/geo@evil.example/x", "/admin", "/V1/GEOx"]) {
      const response = await gateway.fetch(path);
      assert.equal(response.status, 404, path);
      assert.equal(response.headers.get("cache-control"), "no-store");
      assert.deepEqual(await response.json(), { error: "no route for this path", code: "sluice_no_route" });
    }
    assert.equal(gateway.upstream.length, 0);
  });

  test("encoded traversal gets 400 and never reaches the upstream", async () => {
    const paths = [
      "/v1/geo//evil.example/x",
      "/v1/geo/https://evil.example/x",
      "/v1/geo/..%2f..%2fadmin",
      "/v1/geo/%2e%2e%2f%2e%2e%2fadmin",
      "/v1/geo/..%5cadmin",
      "/v1/geo/%252e%252e/%252e%252e/admin",
      "/v1/geo/..;/admin",
      "/v1/geo/%c0%ae%c0%ae/admin",
      "/v1/geo/%ef%bc%8e%ef%bc%8e/admin",
      "/v1/geo/a%00b",
    ];
    for (const path of paths) {
      const response = await gateway.fetch(path);
      assert.equal(response.status, 400, path);
      assert.equal(response.headers.get("cache-control"), "no-store");
      assert.equal((await response.json()).code, "sluice_bad_path");
    }
    assert.equal(gateway.upstream.length, 0);
  });

  test("refused paths charge no limit", async () => {
    for (let i = 0; i < 5; i++) await gateway.fetch("/v1/geo/..%2fx");
    assert.equal((await gateway.fetch("/v1/geo/ok")).status, 200);
    assert.deepEqual(await gateway.control("/calls"), [{ route: "/v1/geo", rules: ["geo-ip"] }]);
  });

  // A client library would normalise these before sending; raw HTTP shows what the Worker does with
  // them as they arrive: the runtime resolves dot segments and backslashes, so they climb out of
  // the route — to a path no route lists.
  test("raw dot segments, encoded dots and backslashes are resolved before routing: 404", async () => {
    for (const raw of ["/v1/geo/../../admin", "/v1/geo/%2e%2e/%2e%2e/admin", "/v1/geo/%2E%2E/%2e%2E/admin", "/v1/geo\\..\\..\\admin", "/v1/geo/.%2e/.%2e/admin"]) {
      const response = await gateway.raw(raw);
      assert.equal(response.status, 404, raw);
      assert.match(response.body, /sluice_no_route/);
    }
    assert.equal(gateway.upstream.length, 0);
  });

  test("raw dot segments inside a route stay inside it and are forwarded resolved", async () => {
    const response = await gateway.raw("/v1/geo/a/b/../c");
    assert.equal(response.status, 200);
    assert.deepEqual(gateway.upstream.map((r) => [r.host, r.url]), [["api.upstream.test", "/v2/geo/a/c"]]);
  });

  test("raw encoded slashes, double encoding and scheme-relative paths are refused: 400", async () => {
    for (const raw of ["/v1/geo/..%2f..%2fadmin", "/v1/geo/%252e%252e/", "/v1/geo//evil.example/x", "/v1/geo/..%5c..%5cadmin"]) {
      const response = await gateway.raw(raw);
      assert.equal(response.status, 400, raw);
    }
    assert.equal(gateway.upstream.length, 0);
  });

  test("an absolute URL as the request target never reaches the upstream", async () => {
    // workerd's HTTP server itself refuses the absolute form; the Worker never runs.
    const response = await gateway.raw("http://evil.example/v1/geo/x");
    assert.notEqual(response.status, 200);
    assert.equal(gateway.upstream.length, 0);
  });

  test("userinfo-looking segments stay on the upstream host", async () => {
    const response = await gateway.fetch("/v1/geo/@evil.example/x?next=//evil.example");
    assert.equal(response.status, 200);
    assert.deepEqual(gateway.upstream.map((r) => [r.host, r.url]), [["api.upstream.test", "/v2/geo/@evil.example/x?next=//evil.example"]]);
  });

  test("with a root route, a scheme-relative path is refused rather than forwarded", async () => {
    const config = {
      routes: [
        {
          prefix: "/",
          methods: ["GET"],
          upstream: { url: "https://api.upstream.test" },
          rules: [{ name: "root-ip", algorithm: "fixed-window", limit: 100, windowSec: 60, key: "ip" }],
        },
      ],
    };
    const root = await startGateway({ bundledConfig: config });
    try {
      assert.equal((await root.fetch("//evil.example/x")).status, 400);
      assert.equal((await root.raw("//evil.example/x")).status, 400);
      assert.equal(root.upstream.length, 0);
      assert.equal((await root.fetch("/x")).status, 200);
      assert.deepEqual(root.upstream.map((r) => [r.host, r.url]), [["api.upstream.test", "/x"]]);
    } finally {
      await root.dispose();
    }
  });
});
