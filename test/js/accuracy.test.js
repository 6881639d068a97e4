// The accuracy probe (worker/src/features/accuracy/probe.js): how far an approximate limiter is from
// exact counting, measured on the traffic it sees. Unit checks of its options, sampling and reference
// rules; then the shipped Worker with `accuracy: { sample: 1 }` in three isolates, whose per-isolate
// memory store admits a client's limit once per isolate while exact counting admits it once: the
// isolates' /metrics must add up to exactly that disagreement.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";

import { SluiceConfigError } from "../../worker/src/engine/errors.js";
import { accuracyProbe, normalizeAccuracy, referenceRule, sampled } from "../../worker/src/features/accuracy/probe.js";
import { validateConfig } from "../../worker/gateway/config.js";
import { parseExposition } from "./helpers/prometheus.js";
import { from, startWorkers } from "./helpers/worker.js";

const ADMIN_TOKEN = "accuracy-admin-token-0123456789abcdef";
const UPSTREAM_TOKEN = "accuracy-upstream-token-0123456789";
const ISOLATES = ["acc0", "acc1", "acc2"];
const MINUTE = 60_000;

describe("the probe's parts", () => {
  test("its options: a bad one throws a SluiceConfigError naming it", () => {
    const refused = (options, field) => assert.throws(() => accuracyProbe(options), (error) => error instanceof SluiceConfigError && error.field === field);
    refused(undefined, "accuracy");
    refused({}, "accuracy.sample");
    refused({ sample: 1.5 }, "accuracy.sample");
    refused({ sample: -0.1 }, "accuracy.sample");
    refused({ sample: 0.1, binding: "" }, "accuracy.binding");
    refused({ sample: 0.1, rate: 1 }, "accuracy.rate");
    assert.deepEqual(normalizeAccuracy({ sample: 0.25 }), { sample: 0.25, binding: "SLUICE_DO" });
  });

  test("sampling is by key: the same key gets the same answer every time, and the share is close to the sample", () => {
    const keys = Array.from({ length: 20_000 }, (_, i) => `ip:198.51.${i >> 8}.${i & 255}`);
    const chosen = keys.filter((key) => sampled(key, 0.1)).length;
    assert.ok(chosen > 1700 && chosen < 2300, `${chosen} of 20,000 keys sampled at 0.1`);
    assert.equal(keys.filter((key) => sampled(key, 0.1)).length, chosen, "deterministic");
    assert.equal(keys.filter((key) => sampled(key, 0)).length, 0);
    assert.equal(keys.filter((key) => sampled(key, 1)).length, keys.length);
  });

  test("the reference of a sliding counter is the sliding log of the same window; others are themselves, under an id of their own", () => {
    const rule = { id: "r|sliding-counter|5|60000|0", name: "r", algorithm: "sliding-counter", limit: 5, windowMs: 60_000, burst: 0, keyCapacity: 100 };
    assert.deepEqual(referenceRule(rule), { ...rule, algorithm: "sliding-log", id: `${rule.id}|exact|sliding-log` });
    const fixed = { ...rule, algorithm: "fixed-window", id: "f" };
    assert.deepEqual(referenceRule(fixed), { ...fixed, id: "f|exact" });
    const counting = { ...rule, countDenied: true };
    assert.equal(referenceRule(counting).algorithm, "sliding-counter", "the log does not count denials");
  });

  test("a refusal by an auto-block is not compared: the reference is not charged for it and nothing is counted", () => {
    const probe = accuracyProbe({ sample: 1 });
    const rule = { id: "r|fixed-window|5|60000|0", name: "r", algorithm: "fixed-window", limit: 5, windowMs: 60_000, burst: 0, keyCapacity: 100 };
    const refusal = { allowed: false, limit: 5, remaining: 0, resetMs: 1000, retryAfterMs: 1000, decidingCheck: 0, checks: [null], store: "memory", autoBlocked: true };
    // No env and no binding: were the reference asked, the comparison would fail and count `failed`.
    assert.equal(probe.observe([{ rule, key: "ip:192.0.2.7", cost: 1 }], /** @type {any} */ (refusal), {}, undefined), null);
    assert.deepEqual({ ...probe.counters }, { sampled: 0, agreed: 0, overAdmitted: 0, underAdmitted: 0, failed: 0 });
    const counted = probe.observe([{ rule, key: "ip:192.0.2.7", cost: 1 }], /** @type {any} */ ({ ...refusal, autoBlocked: undefined }), {}, undefined);
    assert.notEqual(counted, null, "the same refusal without the block is compared");
  });

  test("the gateway's accuracy field is validated with the same messages, naming the field", () => {
    const config = JSON.parse(readFileSync(new URL("../../gateway.config.json", import.meta.url), "utf8"));
    assert.throws(() => validateConfig({ ...config, accuracy: { sample: 2 } }), /accuracy\.sample: must be a number from 0 to 1/);
    assert.equal(validateConfig(config).accuracy, null);
    assert.deepEqual({ ...validateConfig({ ...config, accuracy: { sample: 0.5 } }).accuracy }, { sample: 0.5, binding: "SLUICE_DO" });
  });
});

describe("the probe on the shipped Worker, three isolates", () => {
  let mf;
  const isolates = {};
  before(async () => {
    const config = JSON.parse(readFileSync(new URL("../../gateway.config.json", import.meta.url), "utf8"));
    config.accuracy = { sample: 1 };
    mf = await startWorkers(
      ISOLATES.map((name) => ({
        name,
        entry: "demo",
        bindings: { ENV: "production", UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN, SLUICE_CONFIG: JSON.stringify(config) },
        serviceBindings: { DEMO_UPSTREAM: { name, entrypoint: "DemoUpstream" } },
        durableObjects: { SLUICE_DO: name === "acc0" ? { className: "SluiceDurableObject", useSQLite: true } : { className: "SluiceDurableObject", scriptName: "acc0", useSQLite: true } },
        kvNamespaces: { SLUICE_KV: "accuracy-kv" },
      })),
    );
    for (const name of ISOLATES) isolates[name] = await mf.getWorker(name);
  });
  after(() => mf?.dispose());

  async function compared() {
    const sums = { agreed: 0, over_admitted: 0, under_admitted: 0, failed: 0, sampled: 0 };
    for (const name of ISOLATES) {
      const response = await isolates[name].fetch("http://gw/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const families = parseExposition(await response.text());
      for (const { labels, value } of families.get("sluice_accuracy_compared_total")?.samples ?? []) if (labels.route === "/data") sums[labels.outcome] += value;
      for (const { labels, value } of families.get("sluice_accuracy_sampled_total")?.samples ?? []) if (labels.route === "/data") sums.sampled += value;
    }
    return sums;
  }

  test("a client sending its limit to each isolate: the memory store admits it three times over, and the probe counts exactly the excess as over-admitted", async () => {
    // /data: a fixed window of 5 per minute per client, in each isolate's memory. A run that straddles
    // a minute (where both the isolates' and the reference's windows turn) is run again with a new client.
    for (let attempt = 0; attempt < 2; attempt++) {
      const before = await compared();
      const started = Date.now();
      const ip = `203.0.113.${150 + attempt}`;
      const statuses = [];
      for (const name of ISOLATES) for (let i = 0; i < 5; i++) statuses.push((await isolates[name].fetch("http://gw/data", from(ip))).status);
      const finished = Date.now();
      if (Math.floor(started / MINUTE) !== Math.floor(finished / MINUTE)) continue;
      assert.deepEqual(statuses, new Array(15).fill(200), "each isolate admits its own 5");
      // The comparisons travel in the background: read until all 15 are in (at most 50 reads).
      let now = before;
      for (let read = 0; read < 50; read++) {
        now = await compared();
        if (now.agreed + now.over_admitted + now.under_admitted + now.failed - (before.agreed + before.over_admitted + before.under_admitted + before.failed) >= 15) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(now.sampled - before.sampled, 15);
      assert.equal(now.failed - before.failed, 0);
      assert.equal(now.agreed - before.agreed, 5, "exact counting admits the first 5");
      assert.equal(now.over_admitted - before.over_admitted, 10, "and would have denied the other 10");
      assert.equal(now.under_admitted - before.under_admitted, 0);
      return;
    }
    assert.fail("both runs straddled a minute boundary");
  });
});
