// Which upstream bodies the gateway reads for secrets (response-body.js, docs/gateway.md "What it
// costs"): every body by default, whether it is read whole (a length up to 64 KiB) or streamed, except
// media types that cannot carry one as text (images but SVG, audio, video, fonts), which pass as the
// upstream sent them; maskBody "always" masks those too, "never" masks no body. Headers are masked on
// every route. (That a body read whole keeps its Content-Length on the wire is gateway-upstream.test.js's
// "a body of known length keeps its Content-Length".)
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ConfigError, validateConfig } from "../../worker/gateway/gateway.js";
import { FIXTURE_CONFIG, UPSTREAM_TOKEN, startGateway } from "./fixtures/gateway/harness.js";

// A client of its own per request: the routes' rules allow each address 3 requests.
let clients = 0;
const client = () => ({ "cf-connecting-ip": `203.0.${113 + (clients >> 8)}.${clients++ & 255}` });
const MASKED = `token=${"*".repeat(UPSTREAM_TOKEN.length)};`;
const PLAIN = `token=${UPSTREAM_TOKEN};`;

const geo = FIXTURE_CONFIG.routes.find((route) => route.prefix === "/v1/geo");
const withRoute = (prefix, maskBody) => ({ ...geo, prefix, methods: ["GET"], upstream: { ...geo.upstream, maskBody } });
const CONFIG = { ...FIXTURE_CONFIG, routes: [...FIXTURE_CONFIG.routes, withRoute("/v1/always", "always"), withRoute("/v1/never", "never")] };

let gateway;
before(async () => {
  gateway = await startGateway({ bundledConfig: CONFIG });
});
after(() => gateway?.mf.dispose());

async function fetched(path) {
  const response = await gateway.fetch(path, { headers: client() });
  return { status: response.status, header: response.headers.get("x-leak"), body: await response.text() };
}

describe("maskBody", () => {
  const TEXT_TYPES = ["text/plain", "application/json", "application/octet-stream", "image/svg+xml", "text/event-stream"];
  const MEDIA_TYPES = ["image/png", "font/woff2", "audio/mpeg", "video/mp4; codecs=avc1"];

  for (const sized of [true, false]) {
    const how = sized ? "read whole (with its length)" : "streamed, the secret split across chunks";
    test(`default: every text type is masked, ${how}`, async () => {
      for (const type of TEXT_TYPES) {
        const got = await fetched(`/v1/geo/typed?type=${encodeURIComponent(type)}${sized ? "&sized" : ""}`);
        assert.equal(got.status, 200, type);
        assert.equal(got.body, MASKED, type);
        assert.equal(got.header, "*".repeat(UPSTREAM_TOKEN.length), type);
      }
    });

    test(`default: media types pass as the upstream sent them (not read), headers still masked, ${how}`, async () => {
      for (const type of MEDIA_TYPES) {
        const got = await fetched(`/v1/geo/typed?type=${encodeURIComponent(type)}${sized ? "&sized" : ""}`);
        assert.equal(got.body, PLAIN, type);
        assert.equal(got.header, "*".repeat(UPSTREAM_TOKEN.length), type);
      }
    });

    test(`"always" masks media types too; "never" masks no body but every header, ${how}`, async () => {
      for (const type of [...MEDIA_TYPES, "text/plain"]) {
        const always = await fetched(`/v1/always/typed?type=${encodeURIComponent(type)}${sized ? "&sized" : ""}`);
        assert.equal(always.body, MASKED, type);
        const never = await fetched(`/v1/never/typed?type=${encodeURIComponent(type)}${sized ? "&sized" : ""}`);
        assert.equal(never.body, PLAIN, type);
        assert.equal(never.header, "*".repeat(UPSTREAM_TOKEN.length), type);
      }
    });
  }
});

test("maskBody other than auto, always or never is refused, naming the field", () => {
  const bad = { ...FIXTURE_CONFIG, routes: [{ ...geo, upstream: { ...geo.upstream, maskBody: false } }] };
  assert.throws(() => validateConfig(bad), (error) => error instanceof ConfigError && error.path === "routes[0].upstream.maskBody");
});
