// The configuration's `log.admitted`: each log line costs the Worker a console.log (bench/gateway-parts.js
// measures it), so a deployment may drop the lines of routine requests. The attacker's view first: no
// request that was refused, failed, or would have been refused in shadow mode can hide among the dropped
// lines, and no admin request either; only a request its route's rules admitted and its upstream
// answered below 500 goes unlogged, and only when the configuration says so.
import assert from "node:assert/strict";
import { test } from "node:test";

const { ConfigError, validateConfig } = await import("../../worker/gateway/config.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");

const ADMIN = "t".repeat(32);
const unique = (name) => `${name}-${Math.random().toString(36).slice(2, 10)}`;
const config = (log) => ({
  routes: [
    { prefix: "/api", methods: ["GET"], upstream: { url: "https://api.internal/api", service: "UP" }, rules: [{ name: unique("api"), algorithm: "fixed-window", limit: 4, windowSec: 600, key: "ip" }] },
    { prefix: "/shadow", methods: ["GET"], upstream: { url: "https://api.internal/api", service: "UP" }, rules: [{ name: unique("shadow"), algorithm: "fixed-window", limit: 1, windowSec: 600, key: "ip", mode: "shadow" }] },
  ],
  admin: { path: "/_sluice/metrics", tokenSecret: "ADMIN_TOKEN" },
  ...(log === undefined ? {} : { log }),
});

// Every kind of request once, in order; what each logged ([] when nothing).
async function logged(log) {
  const lines = [];
  const upstream = {
    fetch: async (input) => {
      const path = new URL(new Request(input).url).pathname;
      if (path.endsWith("/down")) throw new TypeError("connection refused");
      return new Response("ok", { status: path.endsWith("/broken") ? 503 : path.endsWith("/missing") ? 404 : 200 });
    },
  };
  const gateway = createGateway(validateConfig(config(log)), { log: (line) => lines.push(JSON.parse(line)) });
  const env = { UP: upstream, ADMIN_TOKEN: ADMIN };
  const seen = [];
  const send = async (what, path, init = {}) => {
    const before = lines.length;
    const response = await gateway.fetch(new Request(`https://gw.test${path}`, { ...init, headers: { "cf-connecting-ip": "203.0.113.20", ...init.headers } }), env, { waitUntil() {} });
    await response.arrayBuffer();
    seen.push([what, response.status, lines.slice(before).map((line) => line.decision + (line.error === null ? "" : `: ${line.error}`))]);
  };
  await send("admitted", "/api/ok");
  await send("admitted, the upstream's 404", "/api/missing");
  await send("the upstream's 503", "/api/broken");
  await send("the upstream unreachable", "/api/down");
  await send("denied", "/api/ok");
  await send("shadow, admitted", "/shadow/ok");
  await send("shadow, would have been denied", "/shadow/ok");
  await send("no route", "/elsewhere");
  await send("method refused", "/api/ok", { method: "POST" });
  await send("bad path", "/api/%2e%2e/admin");
  await send("admin, wrong token", "/_sluice/metrics", { headers: { authorization: "Bearer wrong" } });
  await send("admin", "/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN}` } });
  return seen;
}

test("log.admitted false drops only the lines of requests admitted and answered below 500: every refusal, failure, shadow denial and admin request keeps its line", async () => {
  const quiet = await logged({ admitted: false });
  const dropped = quiet.filter(([, , lines]) => lines.length === 0).map(([what]) => what);
  assert.deepEqual(dropped, ["admitted", "admitted, the upstream's 404", "shadow, admitted"]);
  for (const [what, status, lines] of quiet) {
    if (!dropped.includes(what)) assert.equal(lines.length, 1, `${what} (${status}) keeps its one line`);
  }
  const byWhat = Object.fromEntries(quiet.map(([what, status, lines]) => [what, [status, lines[0]]]));
  assert.deepEqual(byWhat["denied"], [429, "denied"]);
  assert.deepEqual(byWhat["the upstream's 503"], [503, "admitted"]);
  assert.deepEqual(byWhat["the upstream unreachable"], [502, "admitted: upstream unreachable"]);
  assert.deepEqual(byWhat["shadow, would have been denied"], [200, "would_have_denied"]);
  assert.equal(byWhat["admin, wrong token"][0], 401);
});

test("by default, and with log.admitted true, every request has its line", async () => {
  for (const log of [undefined, { admitted: true }]) {
    const all = await logged(log);
    assert.deepEqual(all.filter(([, , lines]) => lines.length !== 1).map(([what]) => what), [], `log ${JSON.stringify(log)}`);
  }
});

test("a log setting that is not one is refused at start-up, naming the field", () => {
  for (const [log, path] of [[{ admitted: "no" }, "log.admitted"], [{ admited: false }, "log.admited"], [false, "log"]]) {
    assert.throws(() => validateConfig(config(log)), (error) => error instanceof ConfigError && error.path === path, `${JSON.stringify(log)} names ${path}`);
  }
  assert.deepEqual(validateConfig(config(undefined)).log, { admitted: true });
});
