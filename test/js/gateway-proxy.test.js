// The proxy, in miniflare with the upstream faked at the network boundary (harness.js): method
// allowlist, credential injection and non-leakage, header filtering, passthrough, 502/504, cache
// policy, redirects, service-binding upstreams and the log line.

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { clientResponseHeaders, upstreamRequestHeaders } from "../../worker/gateway/forwarding.js";
import { secretMasker } from "../../worker/gateway/redact.js";
import { ADMIN_TOKEN, FIXTURE_CONFIG, UPSTREAM_TOKEN, startGateway } from "./fixtures/gateway/harness.js";

let gateway;
before(async () => {
  gateway = await startGateway();
});
after(() => gateway.dispose());
beforeEach(() => gateway.reset());

const CLIENT = { "cf-connecting-ip": "203.0.113.7" };

describe("methods", () => {
  test("an unlisted method gets 405 with Allow, and never reaches the upstream", async () => {
    for (const method of ["PUT", "DELETE", "PATCH", "OPTIONS"]) {
      const response = await gateway.fetch("/v1/geo/x", { method, headers: CLIENT });
      assert.equal(response.status, 405, method);
      assert.equal(response.headers.get("allow"), "GET, HEAD, POST");
      assert.equal(response.headers.get("cache-control"), "no-store");
      assert.deepEqual(await response.json(), { error: "method not allowed on this route", code: "sluice_method_not_allowed" });
    }
    const post = await gateway.fetch("/v1/shadow/x", { method: "POST", body: "x" });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get("allow"), "GET");
    assert.equal(gateway.upstream.length, 0);
    assert.deepEqual(await gateway.control("/calls"), [], "a refused method charges no limit");
  });

  test("listed methods are forwarded as they are, with the request body", async () => {
    const head = await gateway.fetch("/v1/geo/x", { method: "HEAD", headers: CLIENT });
    assert.equal(head.status, 200);
    const post = await gateway.raw("/v1/geo/orders?dry=1", {
      method: "POST",
      headers: ["CF-Connecting-IP: 203.0.113.7", "Content-Type: application/json"],
      body: JSON.stringify({ city: "Lyon" }),
    });
    assert.equal(post.status, 200);
    const [seenHead, seenPost] = gateway.upstream;
    assert.equal(seenHead.method, "HEAD");
    assert.equal(seenPost.method, "POST");
    assert.equal(seenPost.url, "/v2/geo/orders?dry=1");
    assert.equal(seenPost.body, '{"city":"Lyon"}');
    assert.equal(seenPost.headers["content-type"], "application/json");
    assert.equal(seenPost.headers["content-length"], "15");
  });
});

describe("the upstream credential", () => {
  test("is added server-side in the configured header, replacing whatever the client sent", async () => {
    await gateway.fetch("/v1/geo/x", { headers: { ...CLIENT, authorization: "Bearer client-token" } });
    await gateway.fetch("/v1/shadow/x", { headers: { ...CLIENT, authorization: "Bearer client-token", "x-api-key": "client-key" } });
    const [geo, shadow] = gateway.upstream;
    assert.equal(geo.headers.authorization, `Bearer ${UPSTREAM_TOKEN}`);
    assert.equal(shadow.headers["x-api-key"], UPSTREAM_TOKEN, "scheme-less header carries the bare secret");
    assert.equal(shadow.headers.authorization, undefined, "the client's authorization is not forwarded");
  });

  test("a route without auth sends no credential at all", async () => {
    await gateway.fetch("/v1/bypass/x", { headers: { ...CLIENT, authorization: "Bearer client-token" } });
    assert.equal(gateway.upstream[0].headers.authorization, undefined);
    assert.ok(!JSON.stringify(gateway.upstream[0].headers).includes(UPSTREAM_TOKEN));
  });

  test("an upstream echoing it back shows it masked, in headers and body", async () => {
    const response = await gateway.fetch("/v1/geo/echo", { headers: CLIENT });
    assert.equal(response.status, 200);
    const echoed = response.headers.get("x-echo-credential");
    assert.equal(echoed, `Bearer ${"*".repeat(UPSTREAM_TOKEN.length)}`);
    const body = await response.text();
    assert.ok(!body.includes(UPSTREAM_TOKEN));
    assert.equal(JSON.parse(body).headers.authorization, `Bearer ${"*".repeat(UPSTREAM_TOKEN.length)}`);
  });

  test("never appears in any response or log line, whatever the outcome", async () => {
    const logged = gateway.logLines().length;
    const paths = ["/v1/geo/x", "/v1/geo/echo", "/v1/slow/hang", "/v1/geo/drop", "/v1/geo/status/500", "/v1/shadow/echo", "/svc/x", "/nope", "/v1/geo/..%2f"];
    for (const path of paths) {
      const response = await gateway.fetch(path, { headers: { "cf-connecting-ip": `198.51.100.${paths.indexOf(path)}` } });
      const text = `${[...response.headers].join("\n")}\n${await response.text()}`;
      assert.ok(!text.includes(UPSTREAM_TOKEN), `${path} leaked the secret: ${text}`);
    }
    const lines = await gateway.waitForLogs(logged + paths.length);
    assert.equal(lines.length, logged + paths.length);
    assert.ok(!gateway.stdout().includes(UPSTREAM_TOKEN), "stdout (the log) holds the secret");
    assert.ok(!gateway.stderr().includes(UPSTREAM_TOKEN), "stderr holds the secret");
  });

  test("a missing secret refuses the request (500) instead of calling the upstream without it", async () => {
    const bare = await startGateway({ bindings: { UPSTREAM_TOKEN: undefined } });
    try {
      const response = await bare.fetch("/v1/geo/x", { headers: CLIENT });
      assert.equal(response.status, 500);
      assert.equal(response.headers.get("cache-control"), "no-store");
      assert.equal((await response.json()).code, "sluice_misconfigured");
      assert.equal(bare.upstream.length, 0);
      const [line] = await bare.waitForLogs(1);
      assert.equal(line.error, "the secret UPSTREAM_TOKEN (upstream credential) is not set");
      // Routes without a credential keep working.
      assert.equal((await bare.fetch("/v1/bypass/x")).status, 200);
    } finally {
      await bare.dispose();
    }
  });
});

describe("client headers", () => {
  test("credentials and client-identifying headers are not forwarded by default", async () => {
    await gateway.fetch("/v1/geo/x", {
      headers: {
        ...CLIENT,
        authorization: "Bearer client-token",
        "proxy-authorization": "Basic eDp5",
        cookie: "session=abc",
        "x-forwarded-for": "10.0.0.1",
        "x-real-ip": "10.0.0.2",
        forwarded: "for=10.0.0.3",
        "cf-ray": "8a1b2c3d4e5f6789-CDG",
        "x-custom": "kept",
        accept: "application/json",
      },
    });
    const { headers } = gateway.upstream[0];
    for (const name of ["proxy-authorization", "cookie", "x-forwarded-for", "x-real-ip", "forwarded", "cf-connecting-ip", "cf-ray"]) {
      assert.equal(headers[name], undefined, `${name} was forwarded`);
    }
    assert.equal(headers.authorization, `Bearer ${UPSTREAM_TOKEN}`);
    assert.equal(headers["x-custom"], "kept");
    assert.equal(headers.accept, "application/json");
  });

  test("a route's forwardHeaders forwards exactly those", async () => {
    await gateway.fetch("/v1/fwd/x", {
      headers: { ...CLIENT, authorization: "Bearer client-token", cookie: "session=abc", "cf-ipcountry": "FR", "x-forwarded-for": "10.0.0.1" },
    });
    const { headers } = gateway.upstream[0];
    assert.equal(headers.authorization, "Bearer client-token");
    assert.equal(headers.cookie, "session=abc");
    assert.equal(headers["cf-ipcountry"], "FR");
    assert.equal(headers["x-forwarded-for"], undefined);
  });

  test("hop-by-hop headers, and those the client names in Connection, are not forwarded", async () => {
    const response = await gateway.raw("/v1/geo/x", {
      headers: ["Connection: x-client-hop", "X-Client-Hop: 1", "Keep-Alive: timeout=99", "Upgrade: websocket", "Proxy-Connection: keep-alive", "X-End-To-End: 1"],
    });
    assert.equal(response.status, 200);
    const { headers } = gateway.upstream[0];
    for (const name of ["x-client-hop", "keep-alive", "upgrade", "proxy-connection"]) {
      assert.equal(headers[name], undefined, `${name} was forwarded`);
    }
    assert.equal(headers["x-end-to-end"], "1");
  });
});

describe("responses", () => {
  test("the upstream's status and body pass through unchanged, errors included", async () => {
    for (const status of [200, 201, 400, 404, 418, 500, 503]) {
      const response = await gateway.fetch(`/v1/bypass/status/${status}`);
      assert.equal(response.status, status);
      assert.equal(await response.text(), `upstream says ${status}`);
    }
    const noContent = await gateway.fetch("/v1/bypass/empty");
    assert.equal(noContent.status, 204);
    assert.equal(noContent.headers.get("x-upstream"), "yes");
  });

  test("end-to-end response headers pass; hop-by-hop ones do not", async () => {
    const response = await gateway.fetch("/v1/bypass/x");
    assert.equal(response.headers.get("x-upstream"), "yes");
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.equal(response.headers.get("keep-alive"), null);
    assert.deepEqual(await response.json(), { method: "GET", host: "api.upstream.test", url: "/v2/bypass/x", body: "" });
  });

  // Both directions walk the runtime's Headers with forEach (forwarding.js): in workerd, as here,
  // a repeated Set-Cookie must stay two fields and a repeated request field one joined field.
  test("two Set-Cookie fields from the upstream reach the client as two; a field the client repeats reaches the upstream joined", async () => {
    const response = await gateway.fetch("/v1/bypass/cookies");
    assert.equal(response.status, 200);
    assert.deepEqual(response.headers.getSetCookie(), ["a=1; Path=/", "b=2; Path=/"]);
    assert.equal(response.headers.get("x-upstream"), "yes");
    assert.equal(await response.text(), "cookies");
    const repeated = await gateway.raw("/v1/geo/x", { headers: ["CF-Connecting-IP: 203.0.113.7", "X-Repeat: 1", "X-Repeat: 2"] });
    assert.equal(repeated.status, 200);
    assert.equal(gateway.upstream.at(-1).headers["x-repeat"], "1, 2");
  });

  test("cache policy on success: the route's directive, or the upstream's own with 'upstream'", async () => {
    const configured = await gateway.fetch("/v1/geo/x", { headers: CLIENT });
    assert.equal(configured.headers.get("cache-control"), "public, max-age=60");
    const passthrough = await gateway.fetch("/v1/bypass/x");
    assert.equal(passthrough.headers.get("cache-control"), "public, max-age=600");
  });

  test("cache-control: no-store on every error, the upstream's and sluice's", async () => {
    const errors = [
      await gateway.fetch("/v1/geo/status/503", { headers: CLIENT }),
      await gateway.fetch("/v1/bypass/status/404"),
      await gateway.fetch("/v1/slow/hang", { headers: CLIENT }),
      await gateway.fetch("/v1/geo/drop", { headers: CLIENT }),
      await gateway.fetch("/nope"),
    ];
    for (const response of errors) assert.equal(response.headers.get("cache-control"), "no-store", String(response.status));
  });

  test("a hanging upstream becomes 504 after the route's timeout", async () => {
    const response = await gateway.fetch("/v1/slow/hang", { headers: CLIENT });
    assert.equal(response.status, 504);
    assert.deepEqual(await response.json(), { error: "upstream did not answer in time", code: "sluice_upstream_timeout" });
    assert.equal(gateway.upstream.length, 1, "the request did reach the upstream");
  });

  test("a body that stalls after the head is cut off after the route's bodyTimeoutMs, counted and logged", async () => {
    const logged = (await gateway.waitForLogs(0)).length;
    const response = await gateway.fetch("/v1/slow/stall", { headers: CLIENT });
    assert.equal(response.status, 200, "the head came in time");
    // workerd aborts the response (and logs the stream's error); how the abort reaches a client depends
    // on what sits between (miniflare's dispatchFetch ends the body): what matters is that it ends.
    const ended = await Promise.race([
      response.text().then(
        () => "ended",
        () => "ended",
      ),
      new Promise((done) => setTimeout(() => done("still hanging after 5 s"), 5_000)),
    ]);
    assert.equal(ended, "ended", "cut off after about the route's 150 ms bodyTimeoutMs");
    const lines = (await gateway.waitForLogs(logged + 2)).slice(logged);
    assert.deepEqual(lines.map((line) => [line.route, line.status, line.error]), [["/v1/slow", 200, null], ["/v1/slow", 200, "upstream body timeout"]]);
    const exposition = await (await gateway.fetch(FIXTURE_CONFIG.admin.path, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    assert.match(exposition, /sluice_upstream_failures_total\{route="\/v1\/slow",reason="body_timeout"\} 1\n/);
  });

  test("bodyTimeoutMs: null leaves a silent body open (a stream may idle as long as it likes)", async () => {
    const config = structuredClone(FIXTURE_CONFIG);
    const upstream = config.routes.find((route) => route.prefix === "/v1/slow").upstream;
    upstream.bodyTimeoutMs = null;
    upstream.timeoutMs = 10_000; // this test is about the body: a loaded machine must not turn the head into a 504
    const unbounded = await startGateway({ bundledConfig: config });
    try {
      const response = await unbounded.fetch("/v1/slow/stall", { headers: CLIENT });
      assert.equal(response.status, 200);
      const reader = response.body.getReader();
      const outcome = await Promise.race([
        (async () => {
          while (!(await reader.read()).done);
          return "ended";
        })().catch(() => "ended"),
        new Promise((done) => setTimeout(() => done("open"), 600)), // four times the route's head timeout
      ]);
      assert.equal(outcome, "open");
      reader.cancel().catch(() => {});
    } finally {
      await unbounded.dispose();
    }
  });

  test("a slow body that keeps sending is never cut off: the bound is on silence, not on the whole body", async () => {
    // Its own gateway, whose slow route waits 1 s: chunks 250 ms apart leave a loaded machine room
    // for timer jitter, and 8 of them take twice the bound in all.
    const config = structuredClone(FIXTURE_CONFIG);
    const upstream = config.routes.find((route) => route.prefix === "/v1/slow").upstream;
    upstream.bodyTimeoutMs = 1000;
    upstream.timeoutMs = 10_000; // this test is about the body: a loaded machine must not turn the head into a 504
    const patient = await startGateway({ bundledConfig: config });
    try {
      const started = Date.now();
      const response = await patient.fetch("/v1/slow/trickle?every=250", { headers: CLIENT });
      assert.equal(response.status, 200);
      const text = await response.text();
      assert.equal(text.split("\n").filter(Boolean).length, 8);
      assert.ok(Date.now() - started > 1000, "the whole body took longer than the timeout");
    } finally {
      await patient.dispose();
    }
  });

  test("an unreachable upstream becomes 502 with sluice's own code", async () => {
    const response = await gateway.fetch("/v1/geo/drop", { headers: CLIENT });
    assert.equal(response.status, 502);
    assert.deepEqual(await response.json(), { error: "upstream unreachable", code: "sluice_upstream_unreachable" });
  });

  test("a redirect is handed to the client, never followed with the credential", async () => {
    const response = await gateway.fetch("/v1/geo/redirect", { headers: CLIENT, redirect: "manual" });
    assert.equal(response.status, 302);
    assert.equal(response.headers.get("location"), "https://evil.example/stolen");
    assert.deepEqual(gateway.upstream.map((r) => r.host), ["api.upstream.test"]);
  });
});

describe("service-binding upstreams", () => {
  test("go through the binding, credential included, never through the network", async () => {
    const response = await gateway.fetch("/svc/cities?x=1", { headers: CLIENT });
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { via: "service", path: "/base/cities" });
    assert.deepEqual(gateway.service, [{ url: "http://svc.internal/base/cities?x=1", authorization: `Bearer ${UPSTREAM_TOKEN}` }]);
    assert.equal(gateway.upstream.length, 0);
  });

  test("a missing binding is a 500, not a fetch to the configured host", async () => {
    const config = structuredClone(FIXTURE_CONFIG);
    config.routes[5].upstream.service = "NOT_BOUND";
    const unbound = await startGateway({ bundledConfig: config });
    try {
      const response = await unbound.fetch("/svc/x");
      assert.equal(response.status, 500);
      assert.equal((await response.json()).code, "sluice_misconfigured");
      assert.equal(unbound.upstream.length, 0);
      assert.equal((await unbound.waitForLogs(1))[0].error, "the service binding NOT_BOUND (upstream) is missing");
    } finally {
      await unbound.dispose();
    }
  });
});

describe("an unexpected failure inside the gateway", () => {
  test("is a JSON 500 with no-store, logged, and the upstream is not called", async () => {
    const logged = gateway.logLines().length;
    await gateway.control("/break-clock"); // the next reading of the gateway's clock throws
    const response = await gateway.fetch("/v1/geo/x", { headers: CLIENT });
    assert.equal(response.status, 500);
    assert.equal(response.headers.get("cache-control"), "no-store");
    assert.deepEqual(await response.json(), { error: "internal error", code: "sluice_internal_error" });
    assert.equal(gateway.upstream.length, 0);
    const [line] = (await gateway.waitForLogs(logged + 1)).slice(logged);
    assert.equal(line.error, "internal error: RangeError");
    assert.equal(line.status, 500);
  });
});

describe("the log", () => {
  test("a CF-Ray the platform did not set is never logged as the ray id", async () => {
    // The runtime fills request.cf (miniflare: `cf`); a client only chooses headers. A ray is logged
    // only when its data center is request.cf.colo (log.js, platformRay).
    const logged = gateway.logLines().length;
    const forged = [
      { headers: { ...CLIENT, "cf-ray": "8a1b2c3d4e5f6789-CDG" }, cf: { colo: "LHR" } },
      { headers: { ...CLIENT, "cf-ray": "attacker-chosen-id" }, cf: { colo: "CDG" } },
      { headers: { ...CLIENT, "cf-ray": "8a1b2c3d4e5f6789-cdg" }, cf: { colo: "CDG" } },
      { headers: { ...CLIENT, "cf-ray": "8a1b2c3d4e5f6789-CDG, 1111111111111111-CDG" }, cf: { colo: "CDG" } },
    ];
    for (const init of forged) await (await gateway.fetch("/v1/geo/x", init)).arrayBuffer();
    const lines = (await gateway.waitForLogs(logged + forged.length)).slice(logged);
    assert.deepEqual(lines.map((line) => line.cfRay), forged.map(() => null));
  });

  test("one JSON line per request: cf-ray, route, upstream status and latency, decision", async () => {
    const logged = gateway.logLines().length;
    await gateway.fetch("/v1/geo/cities?api_key=client-secret", { headers: { ...CLIENT, "cf-ray": "8a1b2c3d4e5f6789-CDG" }, cf: { colo: "CDG" } });
    await gateway.fetch("/v1/slow/hang", { headers: CLIENT });
    await gateway.fetch("/v1/geo/x", { method: "DELETE" });
    const lines = (await gateway.waitForLogs(logged + 3)).slice(logged);
    assert.equal(lines.length, 3);
    assert.deepEqual(lines[0], {
      event: "sluice.request",
      cfRay: "8a1b2c3d4e5f6789-CDG",
      method: "GET",
      route: "/v1/geo",
      status: 200,
      upstreamStatus: 200,
      upstreamLatencyMs: 25,
      decision: "admitted",
      rules: [{ name: "geo-ip", mode: "enforce", event: "admitted", remaining: 2, store: "memory" }],
      error: null,
    });
    assert.equal(lines[1].status, 504);
    assert.equal(lines[1].upstreamStatus, null);
    assert.equal(lines[1].error, "upstream timeout");
    assert.equal(lines[2].status, 405);
    assert.equal(lines[2].decision, "none");
    const text = gateway.stdout();
    assert.ok(!text.includes("client-secret"), "the query string is not logged");
  });
});

describe("masking the credential in a streamed body", () => {
  const encoder = new TextEncoder();
  async function masked(secret, chunks) {
    const stream = new ReadableStream({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
        controller.close();
      },
    });
    return new Response(secretMasker(secret).body(stream)).text();
  }

  test("an occurrence split across chunks, at any point, is masked; lengths are kept", async () => {
    const secret = "s3cr3t-value";
    const text = `before ${secret} middle ${secret}${secret} after`;
    const expected = text.replaceAll(secret, "*".repeat(secret.length));
    for (let size = 1; size <= text.length; size++) {
      const chunks = [];
      for (let at = 0; at < text.length; at += size) chunks.push(text.slice(at, at + size));
      assert.equal(await masked(secret, chunks), expected, `chunks of ${size}`);
    }
  });

  test("self-overlapping secrets and near misses", async () => {
    assert.equal(await masked("aab", ["aa", "aab", "a"]), "aa***a");
    assert.equal(await masked("abab", ["ababab"]), "****ab");
    assert.equal(await masked("secret", ["secre", "", "x secret"]), "secrex ******");
    assert.equal(await masked("secret", []), "");
  });

  test("the secret percent-encoded or JSON-escaped (with / as / or \\/) is masked too, in bodies and headers", async () => {
    const secret = "tok/en+4==";
    const forms = [secret, encodeURIComponent(secret), "tok\\/en+4=="];
    const text = `a ${forms[0]} b ${forms[1]} c ${forms[2]} d`;
    const expected = `a ${"*".repeat(forms[0].length)} b ${"*".repeat(forms[1].length)} c ${"*".repeat(forms[2].length)} d`;
    for (let size = 1; size <= text.length; size += 3) {
      const chunks = [];
      for (let at = 0; at < text.length; at += size) chunks.push(text.slice(at, at + size));
      assert.equal(await masked(secret, chunks), expected, `chunks of ${size}`);
    }
    assert.equal(secretMasker(secret).text(`x-echo: ${forms[1]}`), `x-echo: ${"*".repeat(forms[1].length)}`);
    // A secret that no encoding changes has one spelling: masked as before.
    assert.equal(await masked("plain-token", ["a plain-tok", "en b"]), `a ${"*".repeat(11)} b`);
  });

  test("multi-byte secrets are masked byte for byte", async () => {
    assert.equal(await masked("clé-ü", ["x clé", "-ü y"]), `x ${"*".repeat(7)} y`);
  });

  test("no secret: the stream is passed through untouched", () => {
    const stream = new ReadableStream();
    assert.equal(secretMasker(null).body(stream), stream);
    assert.equal(secretMasker(null).text("v"), "v");
  });
});

describe("header policy, unit by unit", () => {
  const upstream = { auth: { header: "x-api-key", scheme: "" }, forwardHeaders: ["cookie"] };

  test("upstream-bound: connection-listed and credential headers dropped, the credential set", () => {
    const incoming = new Headers({
      connection: "X-Hop, close",
      "x-hop": "1",
      "x-api-key": "client-supplied",
      cookie: "a=1",
      authorization: "Bearer client",
      "cf-ipcountry": "FR",
      accept: "*/*",
    });
    // Pairs, for the runtime to build its Headers from once: read here as Headers would.
    const headers = new Headers(upstreamRequestHeaders(incoming, upstream, "server-secret"));
    assert.deepEqual([...headers], [
      ["accept", "*/*"],
      ["cookie", "a=1"],
      ["x-api-key", "server-secret"],
    ]);
  });

  test("client-bound: hop-by-hop and connection-listed headers dropped, values masked, cache policy applied", () => {
    const fromUpstream = new Headers({
      connection: "x-upstream-hop",
      "x-upstream-hop": "1",
      "keep-alive": "timeout=5",
      "transfer-encoding": "chunked",
      "x-debug": "auth=Bearer server-secret",
      "cache-control": "public, max-age=600",
      etag: '"v1"',
    });
    const mask = secretMasker("server-secret").text;
    const ok = new Headers(clientResponseHeaders(fromUpstream, 200, "private, max-age=5", mask));
    assert.deepEqual([...ok], [
      ["cache-control", "private, max-age=5"],
      ["etag", '"v1"'],
      ["x-debug", `auth=Bearer ${"*".repeat(13)}`],
    ]);
    assert.equal(new Headers(clientResponseHeaders(fromUpstream, 200, "upstream", mask)).get("cache-control"), "public, max-age=600");
    assert.equal(new Headers(clientResponseHeaders(fromUpstream, 304, "upstream", mask)).get("cache-control"), "public, max-age=600");
    assert.equal(new Headers(clientResponseHeaders(fromUpstream, 404, "public, max-age=60", mask)).get("cache-control"), "no-store");
  });

  // The fields go to the runtime as a record where they can (forwarding.js's fieldsInit): a record
  // must lose no field a list of pairs would carry.
  test("client-bound: every Set-Cookie field, and a field named __proto__, reach the client", () => {
    const fromUpstream = new Headers([
      ["set-cookie", "a=1; Path=/"],
      ["set-cookie", "b=2; Path=/"],
      ["__proto__", "kept"],
      ["content-type", "text/plain"],
    ]);
    const mask = secretMasker("server-secret").text;
    const relayed = new Headers(clientResponseHeaders(fromUpstream, 200, "upstream", mask, [["X-RateLimit-Remaining", "4"]]));
    assert.deepEqual(relayed.getSetCookie(), ["a=1; Path=/", "b=2; Path=/"]);
    assert.equal(relayed.get("__proto__"), "kept");
    assert.equal(relayed.get("x-ratelimit-remaining"), "4");
    const single = new Headers(clientResponseHeaders(new Headers([["__proto__", "kept"]]), 200, "upstream", mask, [["X-RateLimit-Remaining", "4"]]));
    assert.deepEqual([...single], [["__proto__", "kept"], ["x-ratelimit-remaining", "4"]]);
  });

  test("upstream-bound: a forwarded field named __proto__ reaches the upstream", () => {
    const incoming = new Headers({ __proto__x: "no", accept: "*/*" });
    incoming.append("__proto__", "kept");
    const headers = new Headers(upstreamRequestHeaders(incoming, { ...upstream, forwardHeaders: ["__proto__"] }, "server-secret"));
    assert.deepEqual([...headers], [
      ["__proto__", "kept"],
      ["accept", "*/*"],
      ["x-api-key", "server-secret"],
    ]);
  });
});
