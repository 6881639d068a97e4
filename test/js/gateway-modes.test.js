// Shadow, bypass and rollout: the pure functions (mode.js), the verdict of a request over a route's
// rules (decide.js, on sluice's real limiter under Node), and the same through the running gateway.

import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { effectiveMode, fnv1a32, isNearLimit, rolloutPoint, ruleEvent } from "../../worker/src/engine/mode.js";
import { FIXTURE_CONFIG, LIMITER_NOW, startGateway } from "./fixtures/gateway/harness.js";
import { calls, recordingFactory } from "./fixtures/gateway/recording-limiter.js";
import { failingDurableNamespace, failingKv } from "./fixtures/failing-stores.js";

const { validateConfig } = await import("../../worker/gateway/config.js");
const { LimiterContractError, decide } = await import("../../worker/gateway/decide.js");
const { createLimiterFactory } = await import("../../worker/gateway/limiter.js");
const { createGateway } = await import("../../worker/gateway/gateway.js");
const { isolateTestHooks } = await import("../../worker/src/engine/isolate.js");

// An independent statement of the rollout hash — FNV-1a over UTF-8, then MurmurHash3's fmix32 —
// so that a change to mode.js that would move keys between the enforced and shadowed sides fails.
function referenceFnv1a(text) {
  let hash = 0x811c9dc5n;
  for (const byte of new TextEncoder().encode(text)) hash = ((hash ^ BigInt(byte)) * 0x01000193n) & 0xffffffffn;
  return Number(hash);
}
function referencePoint(rule, key) {
  let h = BigInt(referenceFnv1a(`${rule}\n${key}`));
  const mul = (a, b) => (a * b) & 0xffffffffn;
  h ^= h >> 16n;
  h = mul(h, 0x85ebca6bn);
  h ^= h >> 13n;
  h = mul(h, 0xc2b2ae35n);
  h ^= h >> 16n;
  return Number(h) / 2 ** 32;
}

const keys = (count, prefix = "ip=10.0.") => Array.from({ length: count }, (_, i) => `${prefix}${i >> 8}.${i & 255}`);

describe("the rollout hash", () => {
  test("FNV-1a matches the published test vectors", () => {
    assert.equal(fnv1a32(""), 0x811c9dc5);
    assert.equal(fnv1a32("a"), 0xe40c292c);
    assert.equal(fnv1a32("foobar"), 0xbf9cf968);
  });

  test("hashes UTF-8 bytes, as TextEncoder encodes them (lone surrogates as U+FFFD)", () => {
    for (const text of ["é", "用户-42", "🦀 key", "a\ud800b", "\udfff", "x".repeat(600)]) {
      assert.equal(fnv1a32(text), referenceFnv1a(text), JSON.stringify(text));
    }
  });

  test("rolloutPoint is FNV-1a + fmix32 of (rule, key), in [0, 1)", () => {
    for (const key of keys(500)) {
      const point = rolloutPoint("orders-per-user", key);
      assert.equal(point, referencePoint("orders-per-user", key));
      assert.ok(point >= 0 && point < 1);
    }
  });
});

describe("effective modes", () => {
  const rule = (mode, rollout = 1) => ({ name: "r", mode, rollout });

  test("bypass and shadow are what they say; enforce at rollout 1 always, at 0 never", () => {
    assert.equal(effectiveMode(rule("bypass"), "k"), "bypass");
    assert.equal(effectiveMode(rule("shadow"), "k"), "shadow");
    assert.equal(effectiveMode(rule("enforce"), "k"), "enforce");
    assert.equal(effectiveMode(rule("enforce", 0), "k"), "shadow");
  });

  test("a partial rollout with no key reported enforces (the stricter side)", () => {
    assert.equal(effectiveMode(rule("enforce", 0.01), undefined), "enforce");
  });

  test("a rollout enforces about its fraction of keys, and the same keys every time", () => {
    const sample = keys(20_000);
    for (const fraction of [0.05, 0.25, 0.5, 0.9]) {
      const enforced = sample.filter((key) => effectiveMode(rule("enforce", fraction), key) === "enforce");
      const share = enforced.length / sample.length;
      assert.ok(Math.abs(share - fraction) < 0.015, `fraction ${fraction}: enforced ${share}`);
      assert.deepEqual(sample.filter((key) => effectiveMode(rule("enforce", fraction), key) === "enforce"), enforced);
    }
  });

  test("raising the fraction only adds keys to the enforced side", () => {
    const sample = keys(5_000);
    const at = (fraction) => new Set(sample.filter((key) => effectiveMode(rule("enforce", fraction), key) === "enforce"));
    const quarter = at(0.25);
    const half = at(0.5);
    for (const key of quarter) assert.ok(half.has(key), key);
    assert.ok(half.size > quarter.size);
  });

  test("different rules pick independent shares of the same keys", () => {
    const sample = keys(20_000);
    const a = sample.filter((key) => effectiveMode({ name: "a", mode: "enforce", rollout: 0.5 }, key) === "enforce");
    const bSet = new Set(sample.filter((key) => effectiveMode({ name: "b", mode: "enforce", rollout: 0.5 }, key) === "enforce"));
    const both = a.filter((key) => bSet.has(key)).length / sample.length;
    assert.ok(Math.abs(both - 0.25) < 0.015, `overlap ${both}`);
  });
});

describe("events and near-limit", () => {
  const decision = (allowed, limit, remaining) => ({ allowed, limit, remaining, resetMs: 0, retryAfterMs: 0 });

  test("a denial is denied when enforced, would-have-denied otherwise", () => {
    assert.equal(ruleEvent("enforce", decision(true, 5, 1)), "admitted");
    assert.equal(ruleEvent("shadow", decision(true, 5, 1)), "admitted");
    assert.equal(ruleEvent("enforce", decision(false, 5, 0)), "denied");
    assert.equal(ruleEvent("shadow", decision(false, 5, 0)), "would_have_denied");
  });

  test("near the limit from 80 % used, admitted decisions only", () => {
    assert.equal(isNearLimit(decision(true, 10, 3)), false);
    assert.equal(isNearLimit(decision(true, 10, 2)), true);
    assert.equal(isNearLimit(decision(true, 3, 1)), false);
    assert.equal(isNearLimit(decision(true, 3, 0)), true);
    assert.equal(isNearLimit(decision(true, 5, 1)), true);
    assert.equal(isNearLimit(decision(false, 10, 0)), false);
  });
});

describe("a request's verdict over a route's rules", () => {
  const config = validateConfig(FIXTURE_CONFIG);
  const route = (prefix, from = config) => from.routes.find((r) => r.prefix === prefix);
  const factory = recordingFactory(createLimiterFactory({ stores: config.stores, clock: () => LIMITER_NOW, ip: config.ip }));
  const limiterFor = (r) => (indexes) => factory(indexes.map((i) => r.rules[i]), { route: r });
  const request = (headers = {}, origin = "https://gateway.test") => new Request(`${origin}/x`, { headers: { "cf-connecting-ip": "192.0.2.1", ...headers } });
  // The Durable Object and KV are bound but down (an outage), so their rules run on their fallbacks.
  const storesDown = { SLUICE_DO: failingDurableNamespace(), SLUICE_KV: failingKv() };
  const run = (prefix, headers, env = {}, origin = undefined) =>
    decide(route(prefix), limiterFor(route(prefix)), request(headers, origin), { ...storesDown, ...env }, {});

  beforeEach(() => {
    isolateTestHooks.reset();
    calls.length = 0;
  });

  test("enforce: admitted until the limit, then blocked; one limiter call per request", async () => {
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await run("/v1/geo"));
    assert.deepEqual(results.map((r) => r.blocked), [false, false, false, true]);
    assert.deepEqual(results.map((r) => r.verdicts[0].event), ["admitted", "admitted", "admitted", "denied"]);
    assert.deepEqual(results.map((r) => r.outcome.remaining), [2, 1, 0, 0]);
    assert.deepEqual(results.map((r) => r.verdicts[0].key), Array(4).fill("ip:192.0.2.1"), "the key each check was made under");
    assert.equal(calls.length, 4);
  });

  test("shadow never blocks, and its denial does not stop the enforced rule from counting", async () => {
    // shadow-ip allows 2, enforced-ip 4, same key.
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await run("/v1/shadow"));
    assert.deepEqual(results.map((r) => r.blocked), [false, false, false, false, true]);
    assert.deepEqual(
      results.map((r) => r.verdicts.map((v) => v.event)),
      [
        ["admitted", "admitted"],
        ["admitted", "admitted"],
        ["would_have_denied", "admitted"],
        ["would_have_denied", "admitted"],
        ["would_have_denied", "denied"],
      ],
    );
    // The enforced rule counted requests 3 and 4 although the shadowed one denied them.
    assert.deepEqual(results.map((r) => r.verdicts[1].decision.remaining), [3, 2, 1, 0, 0]);
    // Requests 3 and 4 took a second call without the shadowed rule; 5 was blocked on the first.
    assert.deepEqual(
      calls.map((c) => c.rules.join("+")),
      ["shadow-ip+enforced-ip", "shadow-ip+enforced-ip", "shadow-ip+enforced-ip", "enforced-ip", "shadow-ip+enforced-ip", "enforced-ip", "shadow-ip+enforced-ip"],
    );
  });

  test("the merged outcome carries every checked rule, shadow included, and the request's fate", async () => {
    for (let i = 0; i < 2; i++) await run("/v1/shadow");
    const third = await run("/v1/shadow");
    assert.equal(third.outcome.allowed, true);
    assert.deepEqual(third.outcome.checks.map((c) => c.allowed), [false, true]);
    assert.deepEqual(third.outcome.rules.map((r) => r.name), ["shadow-ip", "enforced-ip"]);
    assert.deepEqual(third.outcome.keys, ["ip:192.0.2.1", "ip:192.0.2.1"]);
    assert.equal(third.outcome.decidingCheck, 0, "the rule with least remaining decides the top-level numbers");
    assert.equal(third.outcome.remaining, 0);
    assert.deepEqual(third.checked.map((v) => v.rule.name), ["shadow-ip", "enforced-ip"]);
    await run("/v1/shadow");
    const blocked = await run("/v1/shadow");
    assert.equal(blocked.outcome.allowed, false);
    assert.equal(blocked.outcome.decidingCheck, 1, "the blocking rule decides");
    assert.equal(blocked.outcome.retryAfterMs, 50_000, "the fixed window's end, 50 s away");
  });

  test("bypass: no limiter call at all", async () => {
    const result = await run("/v1/bypass");
    assert.equal(result.blocked, false);
    assert.equal(result.outcome, null);
    assert.deepEqual(result.verdicts.map((v) => [v.mode, v.event]), [["bypass", "bypassed"]]);
    assert.equal(calls.length, 0);
  });

  test("the Worker's dev bypass (ENV=dev, a loopback host): every rule bypassed, nothing counted, the host's bypass header", async () => {
    for (let i = 0; i < 5; i++) {
      const result = await run("/v1/geo", {}, { ENV: "dev" }, "http://localhost:8787");
      assert.equal(result.blocked, false);
      assert.deepEqual(result.bypassHeaders, [["X-RateLimit-Bypassed", "true"]]);
      assert.deepEqual(result.verdicts.map((v) => v.event), ["bypassed"]);
    }
    assert.equal((await run("/v1/geo")).outcome.remaining, 2, "nothing was charged while bypassed");
  });

  test("rollout: keys inside the share are blocked, keys outside are shadowed", async () => {
    const users = Array.from({ length: 40 }, (_, i) => `user-${i}`);
    const inside = users.find((u) => rolloutPoint("rollout-user", `user:${u}`) < 0.5);
    const outside = users.find((u) => rolloutPoint("rollout-user", `user:${u}`) >= 0.5);
    const twice = async (user) => {
      await run("/v1/rollout", { authorization: `Bearer ${user}` });
      return run("/v1/rollout", { authorization: `Bearer ${user}` });
    };
    const enforced = await twice(inside);
    assert.equal(enforced.blocked, true);
    assert.deepEqual([enforced.verdicts[0].mode, enforced.verdicts[0].event], ["enforce", "denied"]);
    const shadowed = await twice(outside);
    assert.equal(shadowed.blocked, false);
    assert.deepEqual([shadowed.verdicts[0].mode, shadowed.verdicts[0].event], ["shadow", "would_have_denied"]);
    assert.equal(shadowed.verdicts[0].key, `user:${outside}`);
  });

  test("stores are asked one by one, memory first; a store that fails is reported per rule", async () => {
    // approx-ip counts in KV, whose every call fails here: the chain falls back to the isolate's memory.
    const first = await run("/v1/approx");
    assert.deepEqual(calls.map((c) => c.rules), [["approx-route"], ["approx-ip"]]);
    assert.deepEqual(first.verdicts.map((v) => [v.rule.name, v.event, v.store, v.fallback]), [
      ["approx-ip", "admitted", "memory", true],
      ["approx-route", "admitted", "memory", false],
    ]);
    assert.deepEqual(first.outcome.rules.map((r) => r.name), ["approx-ip", "approx-route"], "headers list the rules in route order");
    await run("/v1/approx");
    const third = await run("/v1/approx");
    assert.equal(third.blocked, true);
    assert.deepEqual(third.verdicts.map((v) => v.event), ["denied", "admitted"], "memory charged before KV's fallback denied");
  });

  test("a store whose every fallback failed: failMode 'closed' is a denial under the deciding rule", async () => {
    // exact-ip counts in the Durable Object, whose every call fails here, with stores.durable { fallback: [], failMode: "closed" }.
    const result = await run("/v1/exact");
    assert.equal(result.blocked, true);
    const [verdict] = result.verdicts;
    assert.deepEqual([verdict.event, verdict.check, verdict.store, verdict.fallback], ["denied", null, "none", true]);
    assert.deepEqual(result.outcome.checks, [null], "no store decided: no counts to show");
    assert.equal(result.outcome.retryAfterMs, 1000);
  });

  test("an earlier store's blocking denial leaves the later stores unasked", async () => {
    const mixed = validateConfig({
      routes: [
        {
          prefix: "/m",
          methods: ["GET"],
          upstream: { url: "https://api.example.com/m" },
          rules: [
            { name: "m-exact", algorithm: "fixed-window", limit: 5, windowSec: 60, key: "ip", store: "durable" },
            { name: "m-local", algorithm: "fixed-window", limit: 1, windowSec: 60, key: "ip" },
          ],
        },
      ],
      stores: { durable: { fallback: ["memory"] } },
    });
    const r = route("/m", mixed);
    const mixedFactory = recordingFactory(createLimiterFactory({ stores: mixed.stores, clock: () => LIMITER_NOW, ip: mixed.ip }));
    const mixedFor = (indexes) => mixedFactory(indexes.map((i) => r.rules[i]), { route: r });
    await decide(r, mixedFor, request(), storesDown, {});
    calls.length = 0;
    const second = await decide(r, mixedFor, request(), storesDown, {});
    assert.equal(second.blocked, true);
    assert.deepEqual(calls.map((c) => c.rules), [["m-local"]], "the durable store was not asked");
    assert.deepEqual(second.verdicts.map((v) => [v.event, v.decision]), [["unchecked", null], ["denied", second.verdicts[1].decision]]);
    assert.deepEqual(second.outcome.rules.map((rule) => rule.name), ["m-local"]);
  });

  test("an enforced rule that denies on the second call (a race) blocks", async () => {
    const r = route("/v1/shadow");
    let call = 0;
    const racing = () => ({
      async limit() {
        call++;
        const deny = { allowed: false, limit: 2, remaining: 0, resetMs: 1, retryAfterMs: 1 };
        const allow = { allowed: true, limit: 4, remaining: 1, resetMs: 1, retryAfterMs: 0 };
        if (call === 1) return { ...deny, decidingCheck: 0, checks: [deny, allow], keys: ["k", "k"] };
        return { ...deny, limit: 4, decidingCheck: 0, checks: [{ ...deny, limit: 4 }], keys: ["k"] };
      },
    });
    const result = await decide(r, racing, request(), {}, {});
    assert.equal(call, 2);
    assert.equal(result.blocked, true);
    assert.deepEqual(result.verdicts.map((v) => v.event), ["would_have_denied", "denied"]);
  });

  test("a shadowed denial from the pre-filter (other checks not consulted) still charges the enforced rule", async () => {
    const r = route("/v1/shadow");
    const seen = [];
    const prefiltered = (indexes) => ({
      async limit() {
        seen.push(indexes.length);
        const deny = { allowed: false, limit: 2, remaining: 0, resetMs: 9000, retryAfterMs: 9000 };
        const allow = { allowed: true, limit: 4, remaining: 3, resetMs: 50_000, retryAfterMs: 0 };
        if (indexes.length === 2) return { ...deny, decidingCheck: 0, checks: [deny, null], keys: ["k", "k"], preFiltered: true };
        return { ...allow, decidingCheck: 0, checks: [allow], keys: ["k"] };
      },
    });
    const result = await decide(r, prefiltered, request(), {}, {});
    assert.deepEqual(seen, [2, 1], "the enforced rule, unconsulted, was checked again alone");
    assert.equal(result.blocked, false);
    assert.deepEqual(result.verdicts.map((v) => v.event), ["would_have_denied", "admitted"]);
  });

  test("a limiter answering the wrong number of checks breaks the contract loudly", async () => {
    const r = route("/v1/shadow");
    const short = () => ({ limit: async () => ({ allowed: true, checks: [{ allowed: true, limit: 1, remaining: 0 }] }) });
    await assert.rejects(decide(r, short, request(), {}, {}), LimiterContractError);
    const none = () => ({ limit: async () => undefined });
    await assert.rejects(decide(r, none, request(), {}, {}), /answered no checks for 2 rules/);
  });
});

describe("rate-limited responses, as `responses` shapes them", () => {
  // A gateway under Node, its upstream a service binding that answers "ok": a 429 never reaches it.
  const env = { UP: { fetch: async () => new Response("ok") } };
  const gatewayWith = (responses) =>
    createGateway(
      validateConfig({
        routes: [
          {
            prefix: "/r",
            methods: ["GET"],
            upstream: { url: "https://up.internal/r", service: "UP" },
            rules: [{ name: "one", algorithm: "fixed-window", limit: 1, windowSec: 60, key: "ip" }],
          },
        ],
        responses,
      }),
      { now: () => LIMITER_NOW, log: () => {} },
    );
  const twice = async (gateway) => {
    const request = () => new Request("https://gateway.test/r", { headers: { "cf-connecting-ip": "192.0.2.99" } });
    assert.equal((await gateway.fetch(request(), env, {})).status, 200);
    return gateway.fetch(request(), env, {});
  };

  beforeEach(() => isolateTestHooks.reset());

  test("problem+json with a code of one's own, and only the draft's header fields", async () => {
    const denied = await twice(gatewayWith({ code: "SLOW_DOWN", problemJson: true, headers: "draft" }));
    assert.equal(denied.status, 429);
    assert.equal(denied.headers.get("content-type"), "application/problem+json");
    assert.deepEqual(await denied.json(), {
      type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
      title: "Request cannot be satisfied as assigned quota has been exceeded",
      status: 429,
      "violated-policies": ["one"],
      code: "SLOW_DOWN",
      retryAfter: 50,
      limit: 1,
      remaining: 0,
      reset: 50,
    });
    assert.equal(denied.headers.get("x-ratelimit-limit"), null);
    assert.equal(denied.headers.get("ratelimit"), '"one";r=0;t=50');
    assert.equal(denied.headers.get("retry-after"), "50");
  });

  test("headers 'none': no rate-limit fields, but a 429 still says when to retry", async () => {
    const denied = await twice(gatewayWith({ headers: "none" }));
    assert.deepEqual([...denied.headers.keys()].filter((name) => name.includes("ratelimit")), []);
    assert.equal(denied.headers.get("retry-after"), "50");
  });
});

describe("through the running gateway", () => {
  let gateway;
  before(async () => {
    gateway = await startGateway();
  });
  after(() => gateway.dispose());
  beforeEach(() => gateway.reset());
  const from = (ip, extra = {}) => ({ headers: { "cf-connecting-ip": ip, ...extra } });

  test("shadow: computed, shown in the headers, never blocking; the enforced rule still blocks", async () => {
    const logged = gateway.logLines().length;
    const responses = [];
    for (let i = 0; i < 5; i++) responses.push(await gateway.fetch("/v1/shadow/x", from("192.0.2.10")));
    assert.deepEqual(responses.map((r) => r.status), [200, 200, 200, 200, 429]);
    const third = responses[2].headers;
    assert.equal(third.get("ratelimit-policy"), '"shadow-ip";q=2;w=60, "enforced-ip";q=4;w=60');
    assert.match(third.get("ratelimit"), /^"shadow-ip";r=0;t=\d+, "enforced-ip";r=1;t=50$/);
    assert.equal(third.get("x-ratelimit-remaining"), "0", "the legacy trio shows what enforcing the shadowed rule would say");
    const denied = responses[4];
    assert.deepEqual(await denied.json(), { error: "too many requests", code: "sluice_rate_limited", retryAfter: 50, limit: 4, remaining: 0, reset: 50 });
    assert.equal(denied.headers.get("retry-after"), "50");
    assert.equal(denied.headers.get("x-ratelimit-limit"), "4", "the blocking rule's numbers");
    assert.equal(denied.headers.get("cache-control"), "no-store");
    assert.equal(gateway.upstream.length, 4, "the blocked request never reached the upstream");
    const lines = (await gateway.waitForLogs(logged + 5)).slice(logged);
    assert.deepEqual(lines.map((l) => l.decision), ["admitted", "admitted", "would_have_denied", "would_have_denied", "denied"]);
  });

  test("a shadow-only route keeps serving past its limit", async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await gateway.fetch("/v1/observe/x", from("192.0.2.11"))).status);
    assert.deepEqual(statuses, [200, 200, 200, 200]);
  });

  test("bypass: unlimited, and the limiter is never asked", async () => {
    for (let i = 0; i < 4; i++) assert.equal((await gateway.fetch("/v1/bypass/x", from("192.0.2.12"))).status, 200);
    assert.deepEqual(await gateway.control("/calls"), []);
  });

  test("rollout: a user inside the share gets 429, one outside is let through, on every request", async () => {
    const users = Array.from({ length: 40 }, (_, i) => `user-${i}`);
    const inside = users.find((u) => rolloutPoint("rollout-user", `user:${u}`) < 0.5);
    const outside = users.find((u) => rolloutPoint("rollout-user", `user:${u}`) >= 0.5);
    const statuses = async (user) => {
      const result = [];
      for (let i = 0; i < 3; i++) result.push((await gateway.fetch("/v1/rollout/x", from("192.0.2.13", { authorization: `Bearer ${user}` }))).status);
      return result;
    };
    assert.deepEqual(await statuses(inside), [200, 429, 429]);
    assert.deepEqual(await statuses(outside), [200, 200, 200]);
  });

  test("a failing limiter: 503 where a rule could block, served where only shadow rules run", async () => {
    const logged = gateway.logLines().length;
    const blocked = await gateway.fetch("/v1/geo/x", from("192.0.2.14", { "x-test-limiter": "throw" }));
    assert.equal(blocked.status, 503);
    assert.equal(blocked.headers.get("cache-control"), "no-store");
    assert.equal((await blocked.json()).code, "sluice_limiter_unavailable");
    assert.equal(gateway.upstream.length, 0);
    const served = await gateway.fetch("/v1/observe/x", from("192.0.2.14", { "x-test-limiter": "throw" }));
    assert.equal(served.status, 200);
    const lines = (await gateway.waitForLogs(logged + 2)).slice(logged);
    assert.deepEqual(lines.map((l) => [l.decision, l.error]), [
      ["limiter_error", "limiter failed: Error"],
      ["limiter_error", "limiter failed: Error"],
    ]);
  });

  test("a store that cannot decide: failMode 'closed' answers 429 under the rule's policy, with no invented counts", async () => {
    const response = await gateway.fetch("/v1/exact/x", from("192.0.2.15"));
    assert.equal(response.status, 429);
    assert.equal(response.headers.get("retry-after"), "1");
    assert.equal(response.headers.get("ratelimit-policy"), '"exact-ip";q=2;w=60');
    assert.equal(response.headers.get("ratelimit"), null, "no store counted: no RateLimit member");
    assert.equal(gateway.upstream.length, 0);
  });
});
