// The gateway's lockout rule kind (worker/gateway/lockout-rule.js): what validates, and every
// error naming its field, at validation or when the gateway builds the rule's engine at start-up.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

const { ConfigError, validateConfig } = await import("../../worker/gateway/config.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");

function config(lockout, more = {}) {
  return {
    routes: [
      {
        prefix: "/login",
        methods: ["POST"],
        upstream: { url: "https://api.example.com/login" },
        rules: [
          { name: "login", algorithm: "sliding-counter", limit: 10, windowSec: 60, key: "ip" },
          { name: "login-lockout", kind: "lockout", key: "body:username", ...lockout },
        ],
      },
      ...(more.routes ?? []),
    ],
    ...(more.stores === undefined ? {} : { stores: more.stores }),
  };
}

function refused(build, path, pattern) {
  assert.throws(build, (error) => {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${error}`);
    assert.equal(error.path, path);
    if (pattern !== undefined) assert.match(error.problem, pattern);
    return true;
  });
}

describe("a lockout rule", () => {
  test("validates with its defaults, and is no limiter's rule", () => {
    const validated = validateConfig(config({}));
    const [route] = validated.routes;
    const rule = route.rules[1];
    assert.equal(rule.kind, "lockout");
    assert.deepEqual(
      { store: rule.store, mode: rule.mode, field: rule.field, client: rule.client, normalize: rule.normalize, maxBodyBytes: rule.maxBodyBytes },
      { store: "durable", mode: "enforce", field: "username", client: "ip", normalize: true, maxBodyBytes: 16384 },
    );
    assert.deepEqual(route.activeRuleIndexes, [0]);
    assert.deepEqual(route.storeGroups, [[0]]);
    assert.equal(route.canBlock, true);
    createGateway(validated, { log() {} });
  });

  const cases = [
    [{ key: "username" }, "routes[0].rules[1].key", /body:<field>/],
    [{ key: undefined }, "routes[0].rules[1].key", /required/],
    [{ key: "body:" }, "routes[0].rules[1].key"],
    [{ name: "bad name" }, "routes[0].rules[1].name"],
    [{ store: "kv" }, "routes[0].rules[1].store"],
    [{ mode: "loud" }, "routes[0].rules[1].mode"],
    [{ rollout: 0.5 }, "routes[0].rules[1].rollout", /unknown field/],
    [{ client: "user" }, "routes[0].rules[1].client"],
    [{ maxBodyBytes: 10 }, "routes[0].rules[1].maxBodyBytes"],
    [{ maxFailures: 0 }, "routes[0].rules[1].maxFailures"],
    [{ windowSec: "15m" }, "routes[0].rules[1].windowSec"],
    [{ lockSec: -5 }, "routes[0].rules[1].lockSec"],
    [{ account: { maxFailures: 3 } }, "routes[0].rules[1].account.maxFailures", /below maxFailures/],
    [{ account: { windowsec: 60 } }, "routes[0].rules[1].account.windowsec"],
    [{ backoff: { factor: 0.5 } }, "routes[0].rules[1].backoff.factor"],
    [{ backoff: { maxLockSec: 1e9 } }, "routes[0].rules[1].backoff.maxLockSec"],
    [{ failureStatuses: [302] }, "routes[0].rules[1].failureStatuses[0]"],
    [{ resetOnSuccess: 1 }, "routes[0].rules[1].resetOnSuccess"],
    [{ failMode: "ajar" }, "routes[0].rules[1].failMode"],
    [{ fallback: ["kv", "memory"] }, "routes[0].rules[1].fallback", /KV/],
    [{ store: "memory", failMode: "open" }, "routes[0].rules[1].failMode", /durable/],
  ];
  for (const [fields, path, pattern] of cases) {
    test(`${JSON.stringify(fields)} is refused at ${path}`, () => refused(() => validateConfig(config(fields)), path, pattern));
  }

  test("two lockout rules of one name on two routes must be the same rule", () => {
    const other = (lockout) => ({
      prefix: "/admin/login",
      methods: ["POST"],
      upstream: { url: "https://api.example.com/admin/login" },
      rules: [{ name: "login-lockout", kind: "lockout", key: "body:username", ...lockout }],
    });
    validateConfig(config({}, { routes: [other({})] }));
    refused(() => validateConfig(config({}, { routes: [other({ maxFailures: 3 })] })), "routes[1].rules[0].name", /defined differently/);
  });

  test("a lockout rule does not share a name with a limit rule", () => {
    const clash = config({ name: "login" });
    refused(() => validateConfig(clash), "routes[0].rules[1].name", /already the name/);
  });
});

// At run time, on the memory store in Node: the gateway's fetch with its upstream a service binding
// faked in env that records the bytes it received and answers as the test says.
describe("a lockout rule at run time (memory store)", () => {
  const PASSWORD = "correct horse battery staple";
  let now = Date.UTC(2030, 0, 1);

  function gatewayWith(lockout) {
    const received = [];
    const upstream = {
      async fetch(url, init) {
        const body = init.body === undefined || init.body === null ? "" : await new Response(init.body).text();
        received.push(body);
        const { password } = JSON.parse(body);
        if (password === "crash") return new Response("down", { status: 503 });
        return password === PASSWORD ? Response.json({ ok: true }) : Response.json({ error: "no" }, { status: 401 });
      },
    };
    const raw = {
      routes: [
        {
          prefix: "/login",
          methods: ["POST"],
          upstream: { url: "https://login.internal/login", service: "UP" },
          rules: [{ name: `lo-${Math.random().toString(36).slice(2, 10)}`, kind: "lockout", key: "body:username", store: "memory", ...lockout }],
        },
      ],
    };
    const gateway = createGateway(validateConfig(raw), { now: () => now, log() {} });
    const send = async (username, password, ip = "192.0.2.1", extra = "") => {
      const body = `${JSON.stringify({ username, password }).slice(0, -1)}${extra}}`;
      const response = await gateway.fetch(
        new Request("https://gw.test/login", { method: "POST", headers: { "cf-connecting-ip": ip }, body }),
        { UP: upstream },
        { waitUntil() {} },
      );
      return { status: response.status, body: await response.text() };
    };
    return { gateway, send, received };
  }

  test("the upstream receives the body byte for byte", async () => {
    const { send, received } = gatewayWith({});
    const extra = ',"note":"ünïcödé \\u00e9 \\"quoted\\"","n":[1,{"username":"nested"}]';
    assert.equal((await send("Alice", PASSWORD, "192.0.2.1", extra)).status, 200);
    assert.equal(received[0], `${JSON.stringify({ username: "Alice", password: PASSWORD }).slice(0, -1)}${extra}}`);
  });

  test("in shadow mode a lock is counted but never refused", async () => {
    const { gateway, send } = gatewayWith({ mode: "shadow", maxFailures: 2 });
    for (let i = 0; i < 4; i++) assert.equal((await send("bob", "guess")).status, 401);
    assert.equal((await send("bob", PASSWORD)).status, 200);
    assert.equal(gateway.metrics.ruleCount(0, 0, "would_have_denied"), 3);
    assert.equal(gateway.metrics.ruleCount(0, 0, "admitted"), 2);
    assert.equal(gateway.metrics.ruleCount(0, 0, "denied"), 0);
  });

  test("an upstream error counts as neither failure nor success; custom failure statuses count", async () => {
    const { send } = gatewayWith({ maxFailures: 2 });
    for (let i = 0; i < 5; i++) assert.equal((await send("carol", "crash")).status, 503);
    assert.equal((await send("carol", "guess")).status, 401);
    assert.equal((await send("carol", "guess")).status, 401);
    const locked = await send("carol", PASSWORD);
    assert.equal(locked.status, 429);
    assert.deepEqual(JSON.parse(locked.body), { error: "too many failed attempts", code: "sluice_locked_out", retryAfter: 900 });

    const strict = gatewayWith({ maxFailures: 2, failureStatuses: [401, 503] });
    await strict.send("dave", "crash");
    await strict.send("dave", "crash");
    assert.equal((await strict.send("dave", PASSWORD)).status, 429);
  });

  test("the lock ends after lockSec on the gateway's clock", async () => {
    const { send } = gatewayWith({ maxFailures: 1, lockSec: 30, account: false });
    await send("erin", "guess");
    now += 30_000 - 1;
    assert.equal((await send("erin", PASSWORD)).status, 429);
    now += 1;
    assert.equal((await send("erin", PASSWORD)).status, 200);
  });
});
