// `sluice replay` run as a user runs it (node worker/cli/sluice.js replay ...): each format from a
// file or a pipe, gzip or plain, --json, --html, --suggest, and its errors. --suggest's counts are
// checked against an oracle that counts aligned windows itself, which is exact for a fixed window.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { ClientTable } from "../../worker/cli/replay/client-table.js";
import { redactKey } from "../../worker/cli/replay/redact-key.js";
import { CSV_COLUMNS, CSV_HEADER, MALFORMED, combinedLine, csvLine, logpushLine, traffic, withMalformed } from "./fixtures/replay/traffic.js";

const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const CLI = join(ROOT, "worker/cli/sluice.js");
const dir = mkdtempSync(join(tmpdir(), "sluice-replay-cli-"));

/** Runs the CLI; resolves to { code, stdout, stderr }. */
function run(args, { input } = {}) {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [CLI, "replay", ...args], { cwd: dir });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}

const requests = traffic({ seed: 3, count: 3000, clients: 80, durationMs: 600_000, abusers: 4 });

describe("inputs and the summary", () => {
  test("a gzip Logpush file with junk lines: every line counted, junk listed by number, the summary in JSON", async () => {
    const { lines, numbers } = withMalformed(requests.map((r) => logpushLine(r)), MALFORMED.logpush);
    const file = join(dir, "http_requests.log.gz");
    writeFileSync(file, gzipSync(`${lines.join("\n")}\n`));
    const { code, stdout, stderr } = await run(["--rule", "ip 30/1m sliding-counter", "--rule", "user 100/1m fixed-window name=per-user", "--json", file]);
    assert.equal(code, 0, stderr);
    assert.equal(stderr, "", "no progress bar when standard error is not a terminal");
    const summary = JSON.parse(stdout);
    assert.equal(summary.format, "sluice-replay");
    assert.deepEqual(summary.lines, { total: lines.length, blank: 0, unparseable: MALFORMED.logpush.length, replayed: requests.length });
    assert.deepEqual(summary.badLines, numbers.map((n) => `${file}:${n}`));
    assert.equal(summary.formats[file], "logpush");
    assert.equal(summary.requests.checked, requests.length);
    const [ipRule, userRule] = summary.rules;
    assert.equal(ipRule.requests, requests.length);
    assert.equal(ipRule.admitted + ipRule.limited, ipRule.requests);
    assert.ok(ipRule.limited > 0 && ipRule.clientsLimited > 0, "the abusers are limited");
    assert.equal(ipRule.clients, new Set(requests.map((r) => (r.ip.includes(":") ? r.ip.split(":").slice(0, 3).join(":") : r.ip))).size);
    // Tokens never reach the report: user keys are fingerprints.
    assert.equal(userRule.rule.name, "per-user");
    const shown = JSON.stringify(summary);
    for (const r of requests) if (r.authorization !== null) assert.ok(!shown.includes(r.authorization.slice(7)), "a bearer token is in the report");
    assert.ok(summary.rules.every((rule) => rule.topClients.every((c) => !c.key.startsWith("user:") || /^user:sha256:[0-9a-f]{12}$/.test(c.key))));
  });

  test("combined logs through a pipe, CSV through a column map, as text", async () => {
    const combined = await run(["--rule", "ip 30/1m fixed-window"], { input: `${requests.map(combinedLine).join("\n")}\n` });
    assert.equal(combined.code, 0, combined.stderr);
    assert.match(combined.stdout, /replayed 3,000 of 3,000 lines \(stdin: combined\)/);
    assert.match(combined.stdout, /rule1: 30\/1m fixed-window, key ip, enforce\n  requests 3,000, would deny [1-9]/);
    assert.ok(!combined.stdout.includes("\r"));

    const file = join(dir, "export.csv");
    const { lines, numbers } = withMalformed(requests.map(csvLine), MALFORMED.csv, 1);
    writeFileSync(file, `${CSV_HEADER}\n${lines.join("\n")}\n`);
    const csv = await run(["--rule", "user 20/1m token-bucket burst=5", "--columns", CSV_COLUMNS, "--json", file]);
    assert.equal(csv.code, 0, csv.stderr);
    const summary = JSON.parse(csv.stdout);
    assert.equal(summary.lines.replayed, requests.length);
    assert.deepEqual(summary.badLines, numbers.map((n) => `${file}:${n}`));
  });

  test("lines out of time order are replayed as they come, and counted", async () => {
    const shuffled = traffic({ seed: 4, count: 500, clients: 10, disorder: 0.2 });
    const { code, stdout } = await run(["--rule", "ip 10/10s", "--json"], { input: shuffled.map((r) => logpushLine(r, "rfc3339")).join("\n") });
    assert.equal(code, 0);
    const { time } = JSON.parse(stdout);
    assert.ok(time.outOfOrder > 0 && time.longestStepBackMs > 0 && time.longestStepBackMs <= 2000);
  });

  test("a gateway.config.json: routes, refusals and lockout rules as the gateway has them", async () => {
    const { code, stdout, stderr } = await run(["--config", join(ROOT, "gateway.config.json"), "--json"], { input: requests.map((r) => logpushLine(r)).join("\n") });
    assert.equal(code, 0, stderr);
    const summary = JSON.parse(stdout);
    assert.equal(summary.lockoutRulesNotReplayed, 1);
    assert.ok(summary.requests.no_route > 0, "/static and / are no route of the shipped config");
    assert.ok(summary.requests.method > 0, "GET /auth/login is refused (405)");
    const login = summary.rules.find((rule) => rule.rule.name === "login");
    assert.ok(login.denied > 0);
    assert.deepEqual(summary.rules.find((rule) => rule.rule.name === "api").rule.routes, ["/api", "/api/checkout"]);
  });
});

describe("--config with lists and request.cf", () => {
  test("the deny list refuses before any rule, the allow list skips the rules, countries come from ClientCountry", async () => {
    const config = join(dir, "lists.config.json");
    writeFileSync(config, JSON.stringify({
      lists: { deny: { ips: ["198.51.0.1"], countries: ["FR"] }, allow: { ips: ["198.51.0.2"] } },
      routes: [{ prefix: "/", methods: ["GET", "POST"], upstream: { url: "https://u.test/" }, rules: [{ name: "all", algorithm: "fixed-window", limit: 1000, windowSec: 60, key: "cf:country" }] }],
    }));
    const lines = requests.map((r, i) => JSON.stringify({ ...JSON.parse(logpushLine(r)), ClientCountry: i % 10 === 0 ? "fr" : "de" }));
    const { code, stdout, stderr } = await run(["--config", config, "--json"], { input: lines.join("\n") });
    assert.equal(code, 0, stderr);
    const summary = JSON.parse(stdout);
    const denied = requests.filter((r, i) => r.ip === "198.51.0.1" || (i % 10 === 0 && r.ip !== "198.51.0.2")).length;
    const allowed = requests.filter((r) => r.ip === "198.51.0.2").length;
    assert.ok(denied > 0 && allowed > 0);
    assert.equal(summary.requests.deny_list, denied);
    assert.equal(summary.requests.allow_list, allowed);
    assert.equal(summary.requests.checked, requests.length - denied - allowed);
    // Every checked request keyed by its country, which is DE: one client.
    assert.equal(summary.rules[0].clients, 1);
  });
});

describe("--suggest", () => {
  test("at every candidate, a fixed window's clients and requests limited equal an oracle counting aligned windows", async () => {
    const { code, stdout, stderr } = await run(["--rule", "ip 20/1m fixed-window", "--suggest", "--json"], { input: requests.map((r) => logpushLine(r)).join("\n") });
    assert.equal(code, 0, stderr);
    const { suggest, clients } = JSON.parse(stdout).rules[0];
    // The oracle: per client and aligned minute, the number of requests; a limit L denies the
    // requests beyond L in each window, and limits a client whose busiest window passed L.
    const perWindow = new Map();
    for (const r of requests) {
      const client = r.ip.includes(":") ? r.ip.split(":").slice(0, 3).join(":") : r.ip;
      const id = `${client} ${Math.floor(r.timeMs / 60_000)}`;
      perWindow.set(id, (perWindow.get(id) ?? 0) + 1);
    }
    const peaks = new Map();
    for (const [id, n] of perWindow) peaks.set(id.split(" ")[0], Math.max(peaks.get(id.split(" ")[0]) ?? 0, n));
    assert.equal(clients, peaks.size);
    assert.ok(suggest.candidates.length >= 20);
    for (const { limit, clientsLimited, requestsLimited } of suggest.candidates) {
      assert.equal(clientsLimited, [...peaks.values()].filter((peak) => peak > limit).length, `clients at ${limit}`);
      assert.equal(requestsLimited, [...perWindow.values()].reduce((sum, n) => sum + Math.max(0, n - limit), 0), `requests at ${limit}`);
    }
    // Each suggestion meets its share; the candidate below it does not.
    for (const [kind, total] of [["clients", peaks.size], ["requests", requests.length]]) {
      for (const pick of suggest[kind]) {
        const at = suggest.candidates.findIndex((c) => c.limit === pick.limit);
        assert.ok(at >= 0);
        const field = kind === "clients" ? "clientsLimited" : "requestsLimited";
        assert.ok(suggest.candidates[at][field] <= pick.target * total);
        if (at > 0) assert.ok(suggest.candidates[at - 1][field] > pick.target * total);
      }
    }
  });
});

describe("--html", () => {
  test("one self-contained page: a strict CSP, no script, nothing fetched, hostile keys escaped", async () => {
    const hostile = requests.slice(0, 400).map((r, i) => ({ ...r, apiKey: i % 2 ? `<img src=x onerror=alert(1)>` : `"><script>alert(1)</script>` }));
    const page = join(dir, "report.html");
    const { code, stderr } = await run(["--rule", "apiKey:x-api-key 5/1m", "--suggest", "--show-keys", "--html", page], { input: hostile.map((r) => logpushLine(r)).join("\n") });
    assert.equal(code, 0, stderr);
    const html = readFileSync(page, "utf8");
    assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none';/);
    assert.ok(!/<script|<img/i.test(html), "markup from the log is escaped");
    assert.ok(!/<[^>]*\s(src|href|on[a-z]+)=/i.test(html), "no element loads anything or runs a handler");
    assert.ok(!/https?:\/\//.test(html.replace(/xmlns="http:\/\/www\.w3\.org\/2000\/svg"/g, "")));
    assert.match(html, /&#60;img src=x onerror=alert\(1\)&#62;/);
    assert.equal((html.match(/<svg/g) ?? []).length, 2, "the peak distribution and denials over time");
    assert.match(html, /limit 5<\/text>/);
    assert.match(html, /Suggested limits/);
  });
});

describe("keys in reports", () => {
  test("parts that may carry a credential become fingerprints; the rest is shown", () => {
    const shown = redactKey("ip:198.51.0.7|user:tok_secret|key:ak-1|cookie-session:s3cr3t|query-token:t0k|cf-country:DE|jwt-sub:alice");
    assert.match(shown, /^ip:198\.51\.0\.7\|user:sha256:[0-9a-f]{12}\|key:sha256:[0-9a-f]{12}\|cookie-session:sha256:[0-9a-f]{12}\|query-token:sha256:[0-9a-f]{12}\|cf-country:DE\|jwt-sub:alice$/);
    for (const secret of ["tok_secret", "ak-1", "s3cr3t", "t0k"]) assert.ok(!shown.includes(secret));
    assert.equal(redactKey("user:a"), redactKey("user:a"));
  });
});

describe("errors", () => {
  test("a bad rule names the word and exits 2; so does a bad configuration, naming the field", async () => {
    const rule = await run(["--rule", "ip 100/60x"]);
    assert.equal(rule.code, 2);
    assert.match(rule.stderr, /--rule 1 \("ip 100\/60x"\): "100\/60x" is not a quota like 100\/60s/);
    const algorithm = await run(["--rule", "ip 10/1s token-bukket"]);
    assert.match(algorithm.stderr, /unknown algorithm "token-bukket"/);
    const burst = await run(["--rule", "ip 10/1s fixed-window burst=3"]);
    assert.match(burst.stderr, /--rule 1 .*: burst: applies to token-bucket, leaky-bucket and gcra, not fixed-window/);
    const config = join(dir, "bad.config.json");
    writeFileSync(config, JSON.stringify({ routes: [{ prefix: "/a", methods: ["GET"], upstream: { url: "https://u.test/a" }, rules: [{ name: "r", algorithm: "gcra", limit: 0, windowSec: 1, key: "ip" }] }] }));
    const bad = await run(["--config", config]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /routes\[0\]\.rules\[0\]\.limit/);
    const neither = await run([]);
    assert.equal(neither.code, 2);
    assert.match(neither.stderr, /give --config FILE or at least one --rule/);
  });

  test("an input that cannot be read exits 1 and says which", async () => {
    const { code, stderr } = await run(["--rule", "ip 1/1s", join(dir, "missing.log")]);
    assert.equal(code, 1);
    assert.match(stderr, /cannot read the input: .*missing\.log/);
  });
});

describe("memory per rule is bounded", () => {
  test("the client table never holds more than its capacity, and retires each record exactly once", () => {
    const retired = [];
    const table = new ClientTable(50, (record) => retired.push(record.key));
    for (let i = 0; i < 10_000; i++) {
      table.record(`c${i % 700}`).requests++;
      assert.ok(table.records.size <= 50);
    }
    assert.equal(table.evictions, retired.length);
    table.flush();
    assert.equal(table.records.size, 0);
    assert.equal(retired.length, table.evictions + 50);
  });

  test("past --max-clients the summary says its client counts are approximate", async () => {
    const { stdout } = await run(["--rule", "ip 30/1m", "--max-clients", "10", "--json"], { input: requests.map((r) => logpushLine(r)).join("\n") });
    const [rule] = JSON.parse(stdout).rules;
    assert.equal(rule.clientTableCapacity, 10);
    assert.ok(rule.clientRecordsRetired > 0);
  });
});
