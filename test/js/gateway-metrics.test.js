// Metrics: the Prometheus text format, the per-rule counters after a scripted run through the
// gateway, the admin endpoint's bearer authentication, and the Analytics Engine data points.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { tokensEqual } from "../../worker/gateway/admin.js";
import { GatewayMetrics } from "../../worker/gateway/metrics.js";
import { escapeHelp, escapeLabelValue, exposition, formatValue } from "../../worker/gateway/prometheus.js";
import { ADMIN_TOKEN, FIXTURE_CONFIG, startGateway } from "./fixtures/gateway/harness.js";
import { parseExposition, sample } from "./helpers/prometheus.js";

const { validateConfig } = await import("../../worker/gateway/config.js");

describe("the Prometheus text format", () => {
  test("label values escape backslash, double quote and line feed; HELP escapes backslash and line feed", () => {
    assert.equal(escapeLabelValue('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
    assert.equal(escapeLabelValue("plain/route-1"), "plain/route-1");
    assert.equal(escapeHelp('a\\b "quoted"\nnext'), 'a\\\\b "quoted"\\nnext');
  });

  test("values: integers as such, NaN and infinities spelt as the format wants", () => {
    assert.deepEqual([0, 42, 1.5, NaN, Infinity, -Infinity].map(formatValue), ["0", "42", "1.5", "NaN", "+Inf", "-Inf"]);
  });

  test("a family is HELP, TYPE, then its samples; the text ends with a newline", () => {
    const text = exposition([
      {
        name: "x_total",
        help: "Things.",
        type: "counter",
        samples: [
          { labels: { route: '/a"b', rule: "r\\1" }, value: 3 },
          { labels: {}, value: 0 },
        ],
      },
    ]);
    assert.equal(text, '# HELP x_total Things.\n# TYPE x_total counter\nx_total{route="/a\\"b",rule="r\\\\1"} 3\nx_total 0\n');
    const parsed = parseExposition(text);
    assert.deepEqual(parsed.get("x_total").samples[0].labels, { route: '/a"b', rule: "r\\1" });
  });

  test("hostile label values survive a round trip", () => {
    const hostile = 'x"} evil_metric 1\n# TYPE evil counter\n\\';
    const text = exposition([{ name: "m", help: "h", type: "counter", samples: [{ labels: { rule: hostile }, value: 1 }] }]);
    assert.equal(text.split("\n").length, 4, "no injected lines");
    assert.equal(parseExposition(text).get("m").samples[0].labels.rule, hostile);
  });

  test("invalid metric or label names are programming errors", () => {
    assert.throws(() => exposition([{ name: "bad-name", help: "h", type: "counter", samples: [] }]), /metric name/);
    assert.throws(() => exposition([{ name: "ok", help: "h", type: "counter", samples: [{ labels: { "bad-label": "x" }, value: 1 }] }]), /label name/);
    assert.throws(() => exposition([{ name: "ok", help: "h", type: "counter", samples: [{ labels: { __reserved: "x" }, value: 1 }] }]), /label name/);
  });
});

describe("counters", () => {
  test("start at zero for every rule of every route, and parse as valid exposition", () => {
    const metrics = new GatewayMetrics(validateConfig(FIXTURE_CONFIG));
    const families = parseExposition(metrics.toPrometheus());
    for (const event of ["admitted", "denied", "would_have_denied", "bypassed", "fallbacks", "near_limit"]) {
      const family = families.get(`sluice_rule_${event}_total`);
      assert.equal(family.type, "counter");
      assert.equal(family.samples.length, FIXTURE_CONFIG.routes.reduce((n, r) => n + r.rules.length, 0));
      assert.ok(family.samples.every((s) => s.value === 0));
    }
    assert.equal(sample(families, "sluice_rule_admitted_total", { route: "/v1/shadow", rule: "shadow-ip" }), 0);
    assert.equal(sample(families, "sluice_rule_admitted_total", { route: "/v1/shadow", rule: "shadow-ip" }), 0);
    assert.equal(families.get("sluice_rule_admitted_total").samples.find((s) => s.labels.rule === "shadow-ip").labels.mode, "shadow");
  });

  test("a verdict counts its event, plus near-limit and fallback when they apply", () => {
    const metrics = new GatewayMetrics(validateConfig(FIXTURE_CONFIG));
    metrics.countVerdict(0, 0, { event: "admitted", nearLimit: true, fallback: true });
    metrics.countVerdict(0, 0, { event: "denied", nearLimit: false, fallback: false });
    metrics.countVerdict(3, 0, { event: "bypassed", nearLimit: false, fallback: false });
    assert.deepEqual(
      ["admitted", "denied", "near_limit", "fallbacks"].map((e) => metrics.ruleCount(0, 0, e)),
      [1, 1, 1, 1],
    );
    assert.equal(metrics.ruleCount(3, 0, "bypassed"), 1);
    // failMode decided: no event of the rule's own, but a fallback all the same.
    metrics.countVerdict(1, 0, { event: "unchecked", nearLimit: false, fallback: true });
    assert.deepEqual(["admitted", "denied", "would_have_denied", "fallbacks"].map((e) => metrics.ruleCount(1, 0, e)), [0, 0, 0, 1]);
  });
});

describe("tokensEqual", () => {
  test("equal only for the same token, whatever the lengths", async () => {
    assert.equal(await tokensEqual(ADMIN_TOKEN, ADMIN_TOKEN), true);
    assert.equal(await tokensEqual(ADMIN_TOKEN, `${ADMIN_TOKEN.slice(0, -1)}0`), false);
    assert.equal(await tokensEqual(ADMIN_TOKEN.slice(0, 10), ADMIN_TOKEN), false);
    assert.equal(await tokensEqual("", ADMIN_TOKEN), false);
    assert.equal(await tokensEqual(`${ADMIN_TOKEN}x`, ADMIN_TOKEN), false);
  });
});

describe("through the running gateway", () => {
  let gateway;
  before(async () => {
    gateway = await startGateway({ bindings: { RECORD_ANALYTICS: "record" } });
  });
  after(() => gateway.dispose());

  const from = (ip, extra = {}) => ({ headers: { "cf-connecting-ip": ip, ...extra } });
  const scrape = (authorization = `Bearer ${ADMIN_TOKEN}`, init = {}) =>
    gateway.fetch("/_sluice/metrics", { ...init, headers: authorization === null ? {} : { authorization } });

  async function analyticsPoints(count) {
    let points = [];
    for (let attempt = 0; attempt < 100 && points.length < count; attempt++) {
      points = await gateway.control("/analytics");
      if (points.length < count) await new Promise((done) => setTimeout(done, 10));
    }
    return points;
  }

  let families;
  let points;
  before(async () => {
    for (let i = 0; i < 4; i++) await gateway.fetch("/v1/geo/x", from("192.0.2.1")); // 3 admitted, 1 denied
    for (let i = 0; i < 5; i++) await gateway.fetch("/v1/shadow/x", from("192.0.2.2"));
    for (let i = 0; i < 2; i++) await gateway.fetch("/v1/bypass/x", from("192.0.2.3"));
    await gateway.fetch("/v1/geo/x", from("192.0.2.4"));
    await gateway.fetch("/v1/approx/x", from("192.0.2.4")); // approx-ip's KV is bound but fails: memory decides
    await gateway.fetch("/v1/slow/hang", from("192.0.2.5"));
    await gateway.fetch("/v1/geo/drop", from("192.0.2.6"));
    await gateway.fetch("/nope");
    await gateway.fetch("/v1/geo/x", { method: "DELETE" });
    await gateway.fetch("/v1/geo/..%2f");
    // Points: one per request that reached the rules (4 + 5 + 2 + 3 + 1), plus one per rule of it.
    points = await analyticsPoints(4 * 2 + 5 * 3 + 2 * 2 + 3 * 2 + 1 * 3);
    const response = await scrape();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    assert.equal(response.headers.get("cache-control"), "no-store");
    families = parseExposition(await response.text());
  });

  test("admitted, denied and near-limit per enforced rule", () => {
    const geo = { route: "/v1/geo", rule: "geo-ip", mode: "enforce" };
    assert.equal(sample(families, "sluice_rule_admitted_total", geo), 5);
    assert.equal(sample(families, "sluice_rule_denied_total", geo), 1);
    assert.equal(sample(families, "sluice_rule_near_limit_total", geo), 1, "the third request used 3 of 3");
    assert.equal(sample(families, "sluice_rule_would_have_denied_total", geo), 0);
  });

  test("would-have-denied for the shadowed rule, while the enforced one counted on", () => {
    const shadow = { route: "/v1/shadow", rule: "shadow-ip", mode: "shadow" };
    const enforced = { route: "/v1/shadow", rule: "enforced-ip" };
    assert.equal(sample(families, "sluice_rule_admitted_total", shadow), 2);
    assert.equal(sample(families, "sluice_rule_would_have_denied_total", shadow), 3);
    assert.equal(sample(families, "sluice_rule_denied_total", shadow), 0);
    assert.equal(sample(families, "sluice_rule_near_limit_total", shadow), 1);
    assert.equal(sample(families, "sluice_rule_admitted_total", enforced), 4);
    assert.equal(sample(families, "sluice_rule_denied_total", enforced), 1);
  });

  test("bypassed, fallbacks, upstream failures and refusals", () => {
    assert.equal(sample(families, "sluice_rule_bypassed_total", { rule: "bypass-ip" }), 2);
    assert.equal(sample(families, "sluice_rule_admitted_total", { rule: "bypass-ip" }), 0);
    assert.equal(sample(families, "sluice_rule_fallbacks_total", { rule: "approx-ip" }), 1);
    assert.equal(sample(families, "sluice_rule_fallbacks_total", { rule: "approx-route" }), 0, "its memory store did not fail");
    assert.equal(sample(families, "sluice_rule_fallbacks_total", { rule: "geo-ip" }), 0);
    assert.equal(sample(families, "sluice_upstream_failures_total", { route: "/v1/slow", reason: "timeout" }), 1);
    assert.equal(sample(families, "sluice_upstream_failures_total", { route: "/v1/geo", reason: "timeout" }), 0);
    assert.equal(sample(families, "sluice_upstream_failures_total", { route: "/v1/geo", reason: "unreachable" }), 1);
    assert.equal(sample(families, "sluice_refused_total", { code: "sluice_no_route" }), 1);
    assert.equal(sample(families, "sluice_refused_total", { code: "sluice_method_not_allowed" }), 1);
    assert.equal(sample(families, "sluice_refused_total", { code: "sluice_bad_path" }), 1);
    assert.equal(sample(families, "sluice_limiter_errors_total", { route: "/v1/geo" }), 0);
    assert.equal(sample(families, "sluice_analytics_errors_total", {}), 0);
  });

  test("the stores' own counters: who decided, which store failed and how, the breaker", () => {
    // approx-ip's store is KV, bound to a namespace whose every call fails (an outage): memory decides.
    const kv = { chain: "kv:SLUICE_KV" };
    assert.equal(sample(families, "sluice_store_decisions_total", { ...kv, decided_by: "memory" }), 1);
    assert.equal(sample(families, "sluice_store_decisions_total", { ...kv, decided_by: "kv" }), 0);
    assert.equal(sample(families, "sluice_store_failures_total", { ...kv, store: "kv", kind: "error" }), 1);
    assert.equal(sample(families, "sluice_store_failures_total", { ...kv, store: "kv", kind: "timeout" }), 0);
    assert.equal(sample(families, "sluice_store_circuit_opened_total", kv), 0);
    assert.equal(sample(families, "sluice_store_circuit_skipped_total", kv), 0);
    // Memory deciding for KV weakened the limit (per isolate now): a series to alert on.
    assert.equal(sample(families, "sluice_store_weakened_total", { ...kv, decided_by: "memory" }), 1);
    // Per store of the chain, in a live scrape too.
    assert.equal(sample(families, "sluice_store_breaker_opened_total", { ...kv, store: "kv" }), 0);
    assert.equal(sample(families, "sluice_store_breaker_skipped_total", { ...kv, store: "memory" }), 0);
  });

  test("Analytics Engine: a request point and one point per rule, off the request path", () => {
    const requests = points.filter((p) => p.blobs[0] === "request");
    assert.equal(requests.length, 15);
    assert.deepEqual(requests[3], { indexes: ["/v1/geo"], blobs: ["request", "/v1/geo", "denied", "429"], doubles: [1, 429, 0, 0] });
    assert.deepEqual(requests[0], { indexes: ["/v1/geo"], blobs: ["request", "/v1/geo", "admitted", "200"], doubles: [1, 200, 200, 25] });
    const geoDenied = points.filter((p) => p.blobs[0] === "rule" && p.blobs[3] === "denied" && p.blobs[2] === "geo-ip");
    assert.deepEqual(geoDenied, [{ indexes: ["/v1/geo"], blobs: ["rule", "/v1/geo", "geo-ip", "denied", "enforce"], doubles: [1, 0, 3, 0, 0] }]);
    const shadowed = points.filter((p) => p.blobs[2] === "shadow-ip" && p.blobs[3] === "would_have_denied");
    assert.equal(shadowed.length, 3);
    assert.ok(shadowed.every((p) => p.blobs[4] === "shadow"));
    const fellBack = points.filter((p) => p.blobs[0] === "rule" && p.doubles[4] === 1);
    assert.deepEqual(fellBack.map((p) => p.blobs[2]), ["approx-ip"]);
    assert.deepEqual(
      points.filter((p) => p.blobs[2] === "bypass-ip").map((p) => p.blobs[3]),
      ["bypassed", "bypassed"],
    );
  });

  test("the admin path is neither proxied nor limited", async () => {
    const upstreamCalls = gateway.upstream.length;
    for (let i = 0; i < 5; i++) assert.equal((await scrape()).status, 200);
    assert.equal(gateway.upstream.length, upstreamCalls);
  });

  test("without the right bearer token: 401, and no metrics in the body", async () => {
    for (const authorization of [
      null,
      "",
      `Bearer ${ADMIN_TOKEN.slice(0, -1)}X`,
      `Bearer ${ADMIN_TOKEN}x`,
      `Bearer ${ADMIN_TOKEN.slice(0, 8)}`,
      `Basic ${ADMIN_TOKEN}`,
      ADMIN_TOKEN,
      `Bearer ${ADMIN_TOKEN} extra`,
    ]) {
      const response = await scrape(authorization);
      assert.equal(response.status, 401, String(authorization));
      assert.equal(response.headers.get("www-authenticate"), 'Bearer realm="sluice"');
      assert.equal(response.headers.get("cache-control"), "no-store");
      const body = await response.text();
      assert.ok(!body.includes("sluice_rule"), "metrics leaked on 401");
      assert.equal(JSON.parse(body).code, "sluice_unauthorized");
    }
    assert.equal((await scrape(`bearer ${ADMIN_TOKEN}`)).status, 200, "the scheme is case-insensitive");
  });

  test("only GET and HEAD", async () => {
    const post = await scrape(`Bearer ${ADMIN_TOKEN}`, { method: "POST" });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get("allow"), "GET, HEAD");
    const head = await scrape(`Bearer ${ADMIN_TOKEN}`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
  });
});

describe("the admin endpoint fails closed", () => {
  for (const [what, bindings] of [
    ["with no token secret set", { ADMIN_TOKEN: undefined }],
    ["with a token shorter than 32 characters", { ADMIN_TOKEN: "short-token-123" }],
  ]) {
    test(`${what}: 503, never the metrics`, async () => {
      const gateway = await startGateway({ bindings });
      try {
        for (const authorization of [null, "Bearer short-token-123", "Bearer undefined", "Bearer "]) {
          const response = await gateway.fetch("/_sluice/metrics", { headers: authorization === null ? {} : { authorization } });
          assert.equal(response.status, 503);
          assert.equal((await response.json()).code, "sluice_admin_disabled");
        }
      } finally {
        await gateway.dispose();
      }
    });
  }
});

describe("Analytics Engine binding", () => {
  test("absent: nothing is written and requests are served", async () => {
    const gateway = await startGateway();
    try {
      assert.equal((await gateway.fetch("/v1/geo/x")).status, 200);
      assert.deepEqual(await gateway.control("/analytics"), []);
    } finally {
      await gateway.dispose();
    }
  });

  test("a refused write is counted, and the response is unaffected", async () => {
    const gateway = await startGateway({ bindings: { RECORD_ANALYTICS: "reject" } });
    try {
      assert.equal((await gateway.fetch("/v1/geo/x")).status, 200);
      let errors = 0;
      for (let attempt = 0; attempt < 100 && errors === 0; attempt++) {
        const text = await (await gateway.fetch("/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
        errors = sample(parseExposition(text), "sluice_analytics_errors_total", {});
      }
      assert.equal(errors, 1);
    } finally {
      await gateway.dispose();
    }
  });

  test("miniflare's own Analytics Engine binding accepts the points", async () => {
    const gateway = await startGateway({ miniflareOptions: { analyticsEngineDatasets: { SLUICE_ANALYTICS: { dataset: "sluice" } } } });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await gateway.fetch("/v1/shadow/x")).status, 200);
      const text = await (await gateway.fetch("/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
      assert.equal(sample(parseExposition(text), "sluice_analytics_errors_total", {}), 0);
    } finally {
      await gateway.dispose();
    }
  });
});

describe("store families", () => {
  test("chains of one kind and binding add up; each chain's stores are counted apart", async () => {
    const { storeFamilies } = await import("../../worker/gateway/store-metrics.js");
    const chain = (timeoutMs, decided, errors, timeouts, circuitOpened) => ({
      store: "durable",
      bindings: { durable: "SLUICE_DO", kv: "SLUICE_KV" },
      timeoutMs,
      counters: {
        decided,
        fallbacks: 0,
        preFiltered: 2,
        errors,
        timeouts,
        circuitOpened,
        circuitSkipped: 7,
        weakened: { kv: decided.kv, memory: decided.memory, failMode: 0 },
        late: { answered: timeouts.durable, agreed: 0, undone: timeouts.durable, undoMissed: 0, admittedUncounted: 0, failed: 0, unanswered: 0 },
      },
    });
    const families = parseExposition(
      exposition(
        storeFamilies([
          chain(50, { durable: 10, kv: 1, memory: 0, failMode: 0 }, { durable: 1, kv: 0, memory: 0 }, { durable: 5, kv: 0, memory: 0 }, 1),
          chain(80, { durable: 3, kv: 0, memory: 2, failMode: 1 }, { durable: 0, kv: 2, memory: 0 }, { durable: 0, kv: 0, memory: 0 }, 0),
        ]),
      ),
    );
    const durable = { chain: "durable:SLUICE_DO" };
    assert.equal(sample(families, "sluice_store_decisions_total", { ...durable, decided_by: "durable" }), 13);
    assert.equal(sample(families, "sluice_store_decisions_total", { ...durable, decided_by: "failMode" }), 1);
    assert.equal(sample(families, "sluice_store_failures_total", { ...durable, store: "durable", kind: "timeout" }), 5);
    assert.equal(sample(families, "sluice_store_failures_total", { ...durable, store: "kv", kind: "error" }), 2);
    assert.equal(sample(families, "sluice_store_circuit_opened_total", durable), 1);
    assert.equal(sample(families, "sluice_store_circuit_skipped_total", durable), 14);
    assert.equal(sample(families, "sluice_store_prefiltered_total", durable), 4);
    assert.equal(sample(families, "sluice_store_weakened_total", { ...durable, decided_by: "memory" }), 2);
    assert.equal(sample(families, "sluice_store_weakened_total", { ...durable, decided_by: "kv" }), 1);
    assert.equal(sample(families, "sluice_store_late_total", { ...durable, outcome: "undone" }), 5);
    // Neither chain leases: no lease series at all.
    assert.equal(families.get("sluice_lease_granted_total")?.samples.length ?? 0, 0);
  });

  test("each store of a chain has its breaker counters; a Redis chain is labelled by its URL variable and has its own counters", async () => {
    const { storeFamilies } = await import("../../worker/gateway/store-metrics.js");
    const counters = (opened, skipped) => ({
      decided: { redis: 4, memory: 1, failMode: 0 },
      fallbacks: 1,
      preFiltered: 0,
      errors: { redis: 3, memory: 0 },
      timeouts: { redis: 0, memory: 0 },
      circuitOpened: opened.redis + opened.memory,
      circuitSkipped: skipped.redis + skipped.memory,
      circuitOpenedBy: opened,
      circuitSkippedBy: skipped,
    });
    const redisCounters = {
      decisions: 4, roundTrips: 6, conflicts: 1, clockRefusals: 0, held: 2, exhausted: 0,
      batches: 3, appends: 1, givenUp: 2, lateAnswered: 1, lateApplied: 1, undone: 1, undoMissed: 0, overdue: 0,
    };
    const families = parseExposition(
      exposition(
        storeFamilies([
          { store: "redis", bindings: { redisUrl: "REDIS_URL", redisToken: "REDIS_TOKEN", kv: "SLUICE_KV" }, counters: counters({ redis: 2, memory: 0 }, { redis: 5, memory: 0 }), redis: redisCounters },
          { store: "redis", bindings: { redisUrl: "REDIS_URL", redisToken: "REDIS_TOKEN", kv: "SLUICE_KV" }, counters: counters({ redis: 1, memory: 1 }, { redis: 0, memory: 3 }), redis: redisCounters },
        ]),
      ),
    );
    const chain = { chain: "redis:REDIS_URL" };
    assert.equal(sample(families, "sluice_store_breaker_opened_total", { ...chain, store: "redis" }), 3);
    assert.equal(sample(families, "sluice_store_breaker_opened_total", { ...chain, store: "memory" }), 1);
    assert.equal(sample(families, "sluice_store_breaker_skipped_total", { ...chain, store: "redis" }), 5);
    assert.equal(sample(families, "sluice_store_breaker_skipped_total", { ...chain, store: "memory" }), 3);
    assert.equal(sample(families, "sluice_store_circuit_opened_total", chain), 4);
    assert.equal(sample(families, "sluice_store_decisions_total", { ...chain, decided_by: "redis" }), 8);
    assert.equal(sample(families, "sluice_redis_round_trips_total", chain), 12);
    assert.equal(sample(families, "sluice_redis_conflicts_total", chain), 2);
    assert.equal(sample(families, "sluice_redis_held_total", chain), 4);
    assert.equal(sample(families, "sluice_redis_exhausted_total", chain), 0);
    // Every counter of RedisStoreCounters is a family: appends and the given-up calls' fate too.
    assert.equal(sample(families, "sluice_redis_appends_total", chain), 2);
    assert.equal(sample(families, "sluice_redis_batches_total", chain), 6);
    assert.equal(sample(families, "sluice_redis_given_up_total", chain), 4);
    assert.equal(sample(families, "sluice_redis_late_applied_total", chain), 2);
    assert.equal(sample(families, "sluice_redis_undone_total", chain), 2);
  });

  test("round trips per chain are gauges in /metrics: the slowest chain's largest and p99, the sample-weighted mean of smoothed and median; a chain that measured nothing has none", async () => {
    const { storeFamilies } = await import("../../worker/gateway/store-metrics.js");
    const chain = (binding, roundTrip) => ({
      store: "durable",
      bindings: { durable: binding, kv: "SLUICE_KV" },
      counters: { decided: { durable: 1 }, fallbacks: 0, preFiltered: 0, errors: {}, timeouts: {}, circuitOpened: 0, circuitSkipped: 0 },
      roundTrip,
    });
    const summary = (samples, srttMs, p50Ms, p99Ms, maxMs) => ({ endpoints: 1, samples, srttMs, rttvarMs: 1, timeoutMs: 300, recent: { count: Math.min(samples, 256), p50Ms, p99Ms, maxMs } });
    const text = exposition(
      storeFamilies([chain("SLUICE_DO", summary(30, 10, 8, 40, 50)), chain("SLUICE_DO", summary(10, 30, 20, 90, 95)), chain("IDLE_DO", summary(0, NaN, NaN, NaN, NaN))]),
    );
    assert.match(text, /# TYPE sluice_store_round_trip_smoothed_ms gauge/);
    assert.match(text, /# TYPE sluice_store_round_trips_measured_total counter/);
    const families = parseExposition(text);
    const durable = { chain: "durable:SLUICE_DO" };
    assert.equal(sample(families, "sluice_store_round_trips_measured_total", durable), 40);
    assert.equal(sample(families, "sluice_store_round_trip_smoothed_ms", durable), (30 * 10 + 10 * 30) / 40);
    assert.equal(sample(families, "sluice_store_round_trip_p50_ms", durable), (30 * 8 + 10 * 20) / 40);
    assert.equal(sample(families, "sluice_store_round_trip_p99_ms", durable), 90);
    assert.equal(sample(families, "sluice_store_round_trip_max_ms", durable), 95);
    assert.equal(families.get("sluice_store_round_trip_max_ms").samples.length, 1, "IDLE_DO measured nothing: no series");
  });

  test("a leased chain's lease counters: one series per chain, adding up across chains of one binding", async () => {
    const { storeFamilies } = await import("../../worker/gateway/store-metrics.js");
    const leases = (n) => ({ roundTrips: n, leasedDecisions: 10 * n, leasesGranted: 2 * n, unitsLent: 20 * n, leasesExpired: n, unitsReturned: 3 * n, unitsStranded: 4 * n });
    const chain = (binding, leased) => ({
      store: "durable",
      bindings: { durable: binding, kv: "SLUICE_KV" },
      counters: { decided: { durable: 1 }, fallbacks: 0, preFiltered: 0, errors: {}, timeouts: {}, circuitOpened: 0, circuitSkipped: 0 },
      leases: leased,
    });
    const families = parseExposition(exposition(storeFamilies([chain("SLUICE_DO", leases(1)), chain("SLUICE_DO", leases(2)), chain("OTHER_DO", null)])));
    const durable = { chain: "durable:SLUICE_DO" };
    const expected = {
      sluice_lease_round_trips_total: 3,
      sluice_lease_decisions_total: 30,
      sluice_lease_granted_total: 6,
      sluice_lease_units_lent_total: 60,
      sluice_lease_expired_total: 3,
      sluice_lease_units_returned_total: 9,
      sluice_lease_units_stranded_total: 12,
    };
    for (const [name, value] of Object.entries(expected)) {
      assert.equal(sample(families, name, durable), value, name);
      assert.equal(families.get(name).samples.length, 1, `${name}: the chain without leases has no series`);
    }
  });
});
