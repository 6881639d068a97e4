// The gateway's lockout rule kind (worker/src/gateway/lockout-rule.js): what validates, and every
// error naming its field, at validation or when the gateway builds the rule's engine at start-up.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import "./helpers/node-wasm.js";

const { ConfigError, validateConfig } = await import("../../worker/src/gateway/config.js");
const { createGateway } = await import("../../worker/src/gateway/gateway.js");

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
