// The dashboard's sums (worker/gateway/dashboard/aggregate.js), on fixed instants: reports are
// idempotent and numbered, every isolate's latest counts once, retired isolates keep what they counted,
// and the history holds each report's change in the minute it arrived.
import assert from "node:assert/strict";
import { test } from "node:test";

import { DeploymentCounters, GAUGE_EXPIRY_MS, HISTORY_MINUTES, MAX_ISOLATES, RETIRE_AFTER_MS } from "../../worker/gateway/dashboard/aggregate.js";

const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);
const MINUTE = 60_000;
const labels = { route: "/api", rule: "api", mode: "enforce" };
const report = (isolate, seq, admitted, denied = 0, limited = []) => ({
  isolate,
  seq,
  families: [
    { name: "sluice_rule_admitted_total", help: "admitted", samples: [{ labels, value: admitted }] },
    { name: "sluice_rule_denied_total", help: "denied", samples: [{ labels, value: denied }] },
  ],
  limited,
});
const total = (view, name) => view.families.find((f) => f.name === name)?.samples.reduce((a, s) => a + s.value, 0) ?? 0;

test("each isolate's latest report counts once; a repeated or late (older) report changes nothing", () => {
  const counters = new DeploymentCounters();
  assert.equal(counters.ingest(report("a", 1, 5), T0), true);
  assert.equal(counters.ingest(report("b", 1, 7, 2), T0), true);
  assert.equal(counters.ingest(report("a", 3, 9), T0 + 1000), true);
  assert.equal(counters.ingest(report("a", 2, 6), T0 + 2000), false, "seq 2 arrived after seq 3");
  assert.equal(counters.ingest(report("a", 3, 9), T0 + 2000), false, "the same report twice");
  const view = counters.view(T0 + 3000);
  assert.equal(total(view, "sluice_rule_admitted_total"), 16);
  assert.equal(total(view, "sluice_rule_denied_total"), 2);
  assert.equal(view.isolates, 2);
});

test("the history holds each report's change in the minute the object received it", () => {
  const counters = new DeploymentCounters();
  counters.ingest(report("a", 1, 4, 1), T0 + 10_000);
  counters.ingest(report("a", 2, 10, 3), T0 + MINUTE + 5000);
  counters.ingest(report("b", 1, 1), T0 + MINUTE + 6000);
  const [rule] = counters.view(T0 + MINUTE + 7000).history;
  assert.deepEqual([rule.route, rule.rule, rule.mode], ["/api", "api", "enforce"]);
  assert.deepEqual(rule.minutes.admitted.slice(-2), [4, 7]);
  assert.deepEqual(rule.minutes.denied.slice(-2), [1, 2]);
  assert.equal(rule.minutes.admitted.length, HISTORY_MINUTES);
  const later = counters.view(T0 + (HISTORY_MINUTES + 2) * MINUTE).history;
  assert.equal(later.length, 0, "an hour later the minutes are gone; the totals are not");
  assert.equal(total(counters.view(T0 + (HISTORY_MINUTES + 2) * MINUTE), "sluice_rule_admitted_total"), 11);
});

test("an isolate silent past RETIRE_AFTER_MS, or beyond MAX_ISOLATES, is retired and its counts kept", () => {
  const counters = new DeploymentCounters();
  counters.ingest(report("old", 1, 5), T0);
  counters.ingest(report("new", 1, 2), T0 + RETIRE_AFTER_MS);
  const view = counters.view(T0 + RETIRE_AFTER_MS + 1);
  assert.equal(view.isolates, 1);
  assert.equal(view.retiredIsolates, 1);
  assert.equal(total(view, "sluice_rule_admitted_total"), 7);
  for (let i = 0; i < MAX_ISOLATES + 10; i++) counters.ingest(report(`i${i}`, 1, 1), T0 + RETIRE_AFTER_MS + 2 + i);
  assert.ok(counters.isolates.size <= MAX_ISOLATES);
  assert.equal(total(counters.view(T0 + RETIRE_AFTER_MS + MAX_ISOLATES + 20), "sluice_rule_admitted_total"), 7 + MAX_ISOLATES + 10);
});

test("limited keys add up across isolates and leave the list five minutes after their last denial; a stale report's keys still count", () => {
  const counters = new DeploymentCounters();
  counters.ingest(report("a", 2, 1, 1, [["ip#aa", 3, "api"]]), T0);
  counters.ingest(report("b", 1, 1, 1, [["ip#aa", 2, "api"], ["ip#bb", 1, "api"]]), T0 + 1000);
  counters.ingest(report("a", 1, 0, 0, [["ip#bb", 4, "api"]]), T0 + 2000);
  assert.deepEqual(
    counters.view(T0 + 3000).limitedNow.map(({ key, denials }) => [key, denials]),
    [["ip#aa", 5], ["ip#bb", 5]],
  );
  assert.deepEqual(counters.view(T0 + 2000 + 5 * MINUTE + 1).limitedNow, []);
});

test("malformed reports are refused, malformed samples skipped, and the state survives toJSON", () => {
  const counters = new DeploymentCounters();
  assert.equal(counters.ingest({ isolate: 1, seq: 1, families: [] }, T0), false);
  assert.equal(counters.ingest({ isolate: "x", families: [] }, T0), false, "no seq");
  const bad = report("a", 1, 3);
  bad.families[0].samples.push({ labels, value: -1 }, { labels: null, value: 2 }, { labels, value: "9" });
  assert.equal(counters.ingest(bad, T0), true);
  const restored = new DeploymentCounters(JSON.parse(JSON.stringify(counters.toJSON())));
  assert.deepEqual(restored.view(T0 + 1), counters.view(T0 + 1));
  assert.equal(total(restored.view(T0 + 1), "sluice_rule_admitted_total"), 3);
});

// Round-trip gauges as store-round-trips.js reports them: the smoothed one a mean, the largest a max.
const chain = { chain: "durable:SLUICE_DO" };
const gaugeReport = (isolate, seq, smoothed, largest) => ({
  isolate,
  seq,
  families: [
    { name: "sluice_store_round_trips_measured_total", help: "measured", type: "counter", samples: [{ labels: chain, value: 10 }] },
    { name: "sluice_store_round_trip_smoothed_ms", help: "srtt", type: "gauge", reduce: "mean", samples: [{ labels: chain, value: smoothed }] },
    { name: "sluice_store_round_trip_max_ms", help: "max", type: "gauge", reduce: "max", samples: [{ labels: chain, value: largest }] },
  ],
  limited: [],
});
const gauge = (view, name) => view.families.find((f) => f.name === name)?.samples.find((s) => s.labels.chain === chain.chain)?.value;

test("a gauge is each isolate's latest value combined by its reduce (mean or largest), never summed; counters beside it still sum", () => {
  const counters = new DeploymentCounters();
  counters.ingest(gaugeReport("a", 1, 40, 90), T0);
  counters.ingest(gaugeReport("b", 1, 20, 300), T0 + 1000);
  counters.ingest(gaugeReport("a", 2, 60, 70), T0 + 2000);
  const view = counters.view(T0 + 3000);
  assert.equal(gauge(view, "sluice_store_round_trip_smoothed_ms"), 40, "the mean of a's latest 60 and b's 20");
  assert.equal(gauge(view, "sluice_store_round_trip_max_ms"), 300);
  assert.equal(gauge(view, "sluice_store_round_trips_measured_total"), 20, "a counter: summed");
  assert.equal(view.families.find((f) => f.name === "sluice_store_round_trip_max_ms")?.type, "gauge");
  assert.equal(view.families.find((f) => f.name === "sluice_store_round_trips_measured_total")?.type, "counter");
});

test("an isolate's gauges expire GAUGE_EXPIRY_MS after its last report, and leave with it when it retires (its counters stay)", () => {
  const counters = new DeploymentCounters();
  counters.ingest(gaugeReport("a", 1, 40, 900), T0);
  counters.ingest(gaugeReport("b", 1, 20, 30), T0 + GAUGE_EXPIRY_MS);
  const fresh = counters.view(T0 + GAUGE_EXPIRY_MS);
  assert.equal(gauge(fresh, "sluice_store_round_trip_max_ms"), 900, "a's report is exactly GAUGE_EXPIRY_MS old: still counted");
  const later = counters.view(T0 + GAUGE_EXPIRY_MS + 1);
  assert.equal(gauge(later, "sluice_store_round_trip_max_ms"), 30, "only b speaks for now");
  assert.equal(gauge(later, "sluice_store_round_trip_smoothed_ms"), 20);
  const restored = new DeploymentCounters(JSON.parse(JSON.stringify(counters.toJSON())));
  assert.deepEqual(restored.view(T0 + GAUGE_EXPIRY_MS), counters.view(T0 + GAUGE_EXPIRY_MS), "the gauges survive toJSON");
  const retired = counters.view(T0 + GAUGE_EXPIRY_MS + RETIRE_AFTER_MS + 1);
  assert.equal(retired.retiredIsolates, 2);
  assert.equal(gauge(retired, "sluice_store_round_trip_max_ms"), undefined, "no isolate reports the gauge any more");
  assert.equal(gauge(retired, "sluice_store_round_trips_measured_total"), 20, "the retired isolates' counts are kept");
});
