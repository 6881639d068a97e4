// The gateway's dashboard (worker/gateway/dashboard/), on the shipped Worker (worker/index.js, with
// gateway.config.json) in three isolates of one miniflare that share the dashboard's Durable Object:
//  - the attacker's tests first: nothing without the token, no login from another site, no token in a
//    URL, a cookie no script can read, a policy that allows no other origin;
//  - then a real browser (Debian's Chromium, driven headless by playwright-core): the page loads with no
//    console error, shows only a login without the token, and after a login shows the deployment's
//    counters, equal to the sum of what /metrics says in each isolate.
// The isolates report after every request here (reportIntervalMs 0, through SLUICE_CONFIG) so that the
// test need not wait for an interval; reports travel in the background, so the test reads the
// dashboard until every isolate's report has arrived (a bounded number of reads), then compares counts.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

import { parseExposition } from "./helpers/prometheus.js";
import { from, startWorkers } from "./helpers/worker.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ADMIN_TOKEN = "dashboard-admin-token-0123456789abcdef";
const UPSTREAM_TOKEN = "dashboard-upstream-token-0123456789";
const CHROMIUM = "/usr/bin/chromium";
const BASE = "/_sluice/dashboard";
const ISOLATES = ["gw0", "gw1", "gw2"];

const shippedConfig = JSON.parse(readFileSync(path.join(ROOT, "gateway.config.json"), "utf8"));
const config = structuredClone(shippedConfig);
config.admin.dashboard = { ...config.admin.dashboard, reportIntervalMs: 0 };
// The auto-blocking rule on the Durable Object, so its blocks are the deployment's (on memory, each isolate's).
for (const route of config.routes) for (const rule of route.rules) if (rule.autoBlock !== undefined) rule.store = "durable";

let mf;
let url;
/** @type {Record<string, any>} */
const isolates = {};

before(async () => {
  mf = await startWorkers(
    ISOLATES.map((name) => ({
      name,
      entry: "demo",
      bindings: { ENV: "production", UPSTREAM_TOKEN, SLUICE_ADMIN_TOKEN: ADMIN_TOKEN, SLUICE_CONFIG: JSON.stringify(config) },
      serviceBindings: { DEMO_UPSTREAM: { name, entrypoint: "DemoUpstream" } },
      durableObjects: {
        SLUICE_DO: name === "gw0" ? { className: "SluiceDurableObject", useSQLite: true } : { className: "SluiceDurableObject", scriptName: "gw0", useSQLite: true },
        SLUICE_DASHBOARD: name === "gw0" ? { className: "SluiceDashboardObject", useSQLite: true } : { className: "SluiceDashboardObject", scriptName: "gw0", useSQLite: true },
      },
      kvNamespaces: { SLUICE_KV: "dashboard-kv" },
    })),
  );
  url = (await mf.ready).toString().replace(/\/$/, "");
  for (const name of ISOLATES) isolates[name] = await mf.getWorker(name);
});
after(() => mf?.dispose());

/** Sends traffic through every isolate: admitted and denied requests on /data, from several clients. */
async function driveTraffic() {
  const sends = [];
  ISOLATES.forEach((name, i) => {
    for (let n = 0; n < 4; n++) sends.push(isolates[name].fetch("http://gw/data", from(`198.51.100.${10 + i}`)));
    // One noisy client per isolate: over the limit of 5, so some are denied.
    for (let n = 0; n < 8; n++) sends.push(isolates[name].fetch("http://gw/data", from("203.0.113.66")));
  });
  // Checkouts count in the Durable Object (the checkout rule's store is durable): round trips to measure.
  ISOLATES.forEach((name, i) => {
    for (let n = 0; n < 3; n++) sends.push(isolates[name].fetch("http://gw/api/checkout", from(`198.51.100.${40 + i}`, {}, { method: "POST", body: "{}" })));
  });
  const statuses = await Promise.all(sends.map(async (pending) => (await pending).status));
  assert.ok(statuses.includes(200) && statuses.includes(429), `traffic must be both admitted and denied; got ${statuses}`);
  // Wrong passwords for one account until the login lockout refuses it.
  const logins = [];
  for (let n = 0; n < 7; n++) {
    const response = await isolates.gw1.fetch("http://gw/auth/login", from("192.0.2.30", { "content-type": "application/json" }, { method: "POST", body: JSON.stringify({ username: "victim-account", password: `guess-${n}` }) }));
    logins.push(response.status);
  }
  assert.ok(logins.includes(429), `the account must be locked out; got ${logins}`);
}

// The shipped /auth/refresh rule (here on the Durable Object): 30 a minute per IP; 30 refusals within 10 minutes block the IP for an hour.
const BLOCKED_CLIENT = "192.0.2.77";
/**
 * Gets one client blocked by the refresh rule, through isolate gw2 only: 30 admitted, 30 strikes, then
 * the block (requests go on, at most 120, until one is refused for the hour: on this loaded machine a
 * slow object may leave a decision to the fallback, which is then not a strike).
 */
async function driveBlock() {
  for (let n = 0; n < 120; n++) {
    const response = await isolates.gw2.fetch("http://gw/auth/refresh", from(BLOCKED_CLIENT, { "content-type": "application/json" }, { method: "POST", body: "{}" }));
    await response.text();
    if (response.status === 429 && Number(response.headers.get("retry-after")) > 3000) {
      assert.ok(n >= 60, `blocked after 30 admitted and 30 strikes, not before (request ${n + 1})`);
      return;
    }
  }
  assert.fail("the client was never blocked for the hour");
}

/** The counters of one isolate's /metrics. */
async function metricsOf(name) {
  const response = await isolates[name].fetch("http://gw/_sluice/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(response.status, 200);
  return parseExposition(await response.text());
}

/** Each isolate's sample of a store family for the durable chain, as its /metrics says (undefined when none). */
async function durableChainSamples(family) {
  const values = [];
  for (const name of ISOLATES) {
    const sample = (await metricsOf(name)).get(family)?.samples.find((s) => s.labels.chain === "durable:SLUICE_DO");
    if (sample !== undefined) values.push(sample.value);
  }
  return values;
}

/** The sum over the isolates of each rule counter of /metrics, keyed as the page keys them. */
async function summedRuleCounters() {
  const sums = new Map();
  for (const name of ISOLATES) {
    for (const family of (await metricsOf(name)).values()) {
      if (!family.name.startsWith("sluice_rule_")) continue;
      for (const { labels, value } of family.samples) {
        const id = metricId(family.name, labels);
        sums.set(id, (sums.get(id) ?? 0) + value);
      }
    }
  }
  return sums;
}

// As client.js names a cell: the family and its labels, sorted.
const metricId = (name, labels) => `${name}${JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;

async function dataWithToken() {
  const response = await isolates.gw0.fetch(`http://gw${BASE}/data`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(response.status, 200);
  return response.json();
}

// Reads the dashboard until every isolate has reported its latest counters (they travel in the
// background), at most 50 times.
async function settledView(expected) {
  let view;
  for (let attempt = 0; attempt < 50; attempt++) {
    view = await dataWithToken();
    const admitted = view.families.find((f) => f.name === "sluice_rule_admitted_total");
    const total = (admitted?.samples ?? []).reduce((sum, s) => sum + s.value, 0);
    if (view.isolates === ISOLATES.length && total === expected) return view;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return view;
}

describe("the dashboard refuses an attacker", () => {
  test("its data needs the token or a session: none, a wrong token, a forged or expired cookie all get 401", async () => {
    const data = (headers) => isolates.gw1.fetch(`http://gw${BASE}/data`, { headers });
    assert.equal((await data({})).status, 401);
    assert.equal((await data({ authorization: "Bearer wrong-token-wrong-token-wrong-token" })).status, 401);
    assert.equal((await data({ cookie: `__Host-sluice-dashboard=4102444800.${"0".repeat(64)}` })).status, 401, "a forged MAC");
    assert.equal((await data({ cookie: "__Host-sluice-dashboard=1.abc" })).status, 401, "a malformed cookie");
    assert.equal((await data({ authorization: `Bearer ${ADMIN_TOKEN}` })).status, 200);
  });

  test("a login from another site, or with a wrong token, sets no cookie; the token in a URL is ignored", async () => {
    const login = (token, headers) =>
      isolates.gw0.fetch(`http://gw${BASE}/login`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams({ token }).toString(),
        redirect: "manual",
      });
    const crossSite = await login(ADMIN_TOKEN, { "sec-fetch-site": "cross-site", origin: "https://evil.example" });
    assert.equal(crossSite.status, 403);
    assert.equal(crossSite.headers.get("set-cookie"), null);
    const noOrigin = await login(ADMIN_TOKEN, {});
    assert.equal(noOrigin.status, 403, "a POST with neither Sec-Fetch-Site nor Origin is refused");
    const wrong = await login("x".repeat(40), { "sec-fetch-site": "same-origin" });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get("set-cookie"), null);
    assert.ok(!(await wrong.text()).includes(ADMIN_TOKEN));
    const inUrl = await isolates.gw0.fetch(`http://gw${BASE}?token=${ADMIN_TOKEN}`);
    assert.equal(inUrl.status, 200);
    assert.match(await inUrl.text(), /<form method="post"/, "a token in the URL still shows the login form");
    const json = await isolates.gw0.fetch(`http://gw${BASE}/login`, { method: "POST", headers: { "content-type": "application/json", "sec-fetch-site": "same-origin" }, body: JSON.stringify({ token: ADMIN_TOKEN }), redirect: "manual" });
    assert.equal(json.status, 401, "only a form body is read");
  });

  test("a good login sets an HttpOnly, Secure, SameSite=Strict, host-only cookie that is not the token, and the cookie opens the data", async () => {
    const response = await isolates.gw0.fetch(`http://gw${BASE}/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
      body: new URLSearchParams({ token: ADMIN_TOKEN }).toString(),
      redirect: "manual",
    });
    assert.equal(response.status, 303);
    const cookie = response.headers.get("set-cookie");
    assert.match(cookie, /^__Host-sluice-dashboard=\d+\.[0-9a-f]{64}; Path=\/; Max-Age=\d+; HttpOnly; Secure; SameSite=Strict$/);
    assert.ok(!cookie.includes(ADMIN_TOKEN));
    const pair = cookie.split(";")[0];
    const data = await isolates.gw2.fetch(`http://gw${BASE}/data`, { headers: { cookie: pair } });
    assert.equal(data.status, 200, "a session made in one isolate holds in another");
  });

  test("every dashboard response carries a policy that allows only this origin and no framing", async () => {
    for (const suffix of ["", "/app.js", "/app.css", "/data"]) {
      const response = await isolates.gw0.fetch(`http://gw${BASE}${suffix}`, suffix === "/data" ? { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } } : {});
      const policy = response.headers.get("content-security-policy");
      assert.match(policy, /default-src 'none'/, suffix);
      assert.match(policy, /script-src 'self'/, suffix);
      assert.match(policy, /frame-ancestors 'none'/, suffix);
      assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|https?:/, suffix);
      assert.equal(response.headers.get("x-content-type-options"), "nosniff");
      assert.equal(response.headers.get("cache-control")?.startsWith("no-"), true);
    }
  });
});

describe("the dashboard shows the blocks in force", () => {
  test("the blocks in force are the deployment's, from any isolate, and their keys are redacted", async () => {
    await driveBlock();
    // gw0 never saw the client: the list is the store's.
    const { blocks } = await dataWithToken();
    assert.equal(blocks.length, 1, JSON.stringify(blocks));
    assert.equal(blocks[0].rule, "refresh");
    assert.match(blocks[0].key, /^ip#[0-9a-f]{12}$/);
    assert.ok(!JSON.stringify(blocks).includes(BLOCKED_CLIENT), "the address never leaves redacted");
    assert.ok(blocks[0].untilMs > Date.now() + 3_000_000 && blocks[0].untilMs <= Date.now() + 3_600_000, `an hour's block (${blocks[0].untilMs})`);
  });
});

describe("the dashboard in a real browser", () => {
  let browser;
  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: scripts/ensure-tools.sh installs Debian's chromium`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
  });
  after(() => browser?.close());

  test("without the token only a login shows; after it, the counters equal the sum of every isolate's /metrics, with no console error", async () => {
    await driveTraffic();
    const page = await browser.newPage();
    const problems = [];
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") problems.push(`${message.type()}: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));

    await page.goto(`${url}${BASE}`);
    assert.equal(await page.locator("input#token").count(), 1, "the login form");
    assert.equal(await page.locator("#rules").count(), 0, "no counters before the login");
    // With the browser's own cookies (none yet): the data stays closed.
    assert.equal((await page.request.get(`${url}${BASE}/data`)).status(), 401);

    await page.fill("input#token", ADMIN_TOKEN);
    await Promise.all([page.waitForURL(`${url}${BASE}`), page.click("button[type=submit]")]);
    assert.equal(await page.evaluate(() => document.cookie), "", "no script can read the session");

    // What every isolate counted, once all their reports are in.
    const sums = await summedRuleCounters();
    const admittedTotal = [...sums].filter(([id]) => id.startsWith("sluice_rule_admitted_total")).reduce((a, [, v]) => a + v, 0);
    assert.ok(admittedTotal > 0);
    const view = await settledView(admittedTotal);
    assert.equal(view.isolates, ISOLATES.length, "every isolate reported");

    await page.reload();
    await page.waitForSelector("#rules td[data-metric]");
    const shown = new Map(
      await page.$$eval("#rules td[data-metric]", (cells) => cells.map((cell) => [cell.getAttribute("data-metric"), Number(cell.textContent.replace(/,/g, ""))])),
    );
    let compared = 0;
    for (const [id, value] of sums) {
      if (!/^sluice_rule_(admitted|denied|would_have_denied)_total/.test(id)) continue;
      assert.equal(shown.get(id), value, `${id}: the page shows the sum of the isolates' /metrics`);
      compared++;
    }
    assert.ok(compared >= 3 * 5, `compared ${compared} counters`);
    const denied = [...sums].filter(([id]) => id.startsWith("sluice_rule_denied_total")).reduce((a, [, v]) => a + v, 0);
    assert.ok(denied > 0);
    const limitedKeys = await page.$$eval("#limited td.key", (cells) => cells.map((cell) => cell.textContent));
    assert.ok(limitedKeys.length > 0, "the noisy client is listed");
    for (const key of limitedKeys) assert.doesNotMatch(key, /203\.0\.113\.66/, "keys are redacted by default");
    // Round trips to the Durable Object: measured in every isolate, shown per chain with their times.
    const measured = await durableChainSamples("sluice_store_round_trips_measured_total");
    assert.equal(measured.length, ISOLATES.length, "every isolate measured the checkout rule's round trips");
    const largest = await durableChainSamples("sluice_store_round_trip_max_ms");
    const cell = async (family) => {
      const text = await page.locator(`#round-trips td[data-metric='${metricId(family, { chain: "durable:SLUICE_DO" })}']`).textContent();
      return Number(String(text).replace(/,/g, ""));
    };
    assert.equal(await cell("sluice_store_round_trips_measured_total"), measured.reduce((a, b) => a + b, 0), "round trips measured: the sum of /metrics");
    assert.equal(await cell("sluice_store_round_trip_max_ms"), Math.max(...largest), "the largest round trip: the largest of the isolates' /metrics");
    for (const family of ["sluice_store_round_trip_smoothed_ms", "sluice_store_round_trip_p50_ms", "sluice_store_round_trip_p99_ms"]) {
      const shown = await cell(family);
      assert.ok(Number.isFinite(shown) && shown >= 0 && shown <= Math.max(...largest), `${family}: a time in ms, at most the largest (${shown})`);
    }
    // The block started in the attacker's tests above, shown with its key redacted.
    const blocked = await page.$$eval("#blocks td.key", (cells) => cells.map((cell) => cell.textContent));
    assert.equal(blocked.length, 1, "the blocked client is listed under the blocks in force");
    assert.match(blocked[0], /^ip#[0-9a-f]{12}$/);
    const locked = await page.$$eval("#locked td.key", (cells) => cells.map((cell) => cell.textContent));
    assert.equal(locked.length, 1, "the locked account is listed under the lockouts in force");
    assert.match(locked[0], /^account#[0-9a-f]{12}$/);

    const shots = process.env.SLUICE_SCREENSHOT_DIR ?? path.join(tmpdir(), "sluice-dashboard");
    mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: path.join(shots, "dashboard.png"), fullPage: true });
    assert.deepEqual(problems, []);
    await page.close();
  });
});
