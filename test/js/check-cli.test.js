// `sluice check`: the gateway configuration validated offline with start-up's own messages (the
// shipped Worker's resolveConfig, then createGateway, which builds every rule's limiter): exit 0 for
// a configuration that starts, 1 with the message naming the field for one that would not.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const { createGateway, resolveConfig } = await import("../../worker/gateway/gateway.js");

const root = fileURLToPath(new URL("../../", import.meta.url));
const cli = path.join(root, "worker/cli/sluice.js");
const dir = mkdtempSync(path.join(tmpdir(), "sluice-check-"));

function check(config, name = "gateway.config.json") {
  const file = path.join(dir, name);
  writeFileSync(file, typeof config === "string" ? config : JSON.stringify(config));
  const run = spawnSync(process.execPath, [cli, "check", file], { encoding: "utf8" });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr.trim() };
}

// What the shipped Worker says at start-up for the same bundled configuration.
function startUpMessage(config) {
  try {
    createGateway(resolveConfig(config, {}), { log() {} });
  } catch (error) {
    return error.message;
  }
  return null;
}

const route = (rules) => ({ routes: [{ prefix: "/api", methods: ["GET"], upstream: { url: "https://api.example.com/api" }, rules }] });

test("the shipped gateway.config.json passes: exit 0", () => {
  const run = spawnSync(process.execPath, [cli, "check", path.join(root, "gateway.config.json")], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /gateway\.config\.json: valid \(6 routes, 10 rules\)/);
});

test("a configuration start-up refuses exits 1 with start-up's message, naming the field", () => {
  const cases = [
    route([{ name: "api", algorithm: "fixed-window", limit: 0, windowSec: 60, key: "ip" }]),
    route([{ name: "api", algorithm: "fixed-window", limit: 10, windowsec: 60, key: "ip" }]),
    route([{ name: "api", algorithm: "fixed-window", limit: 10, windowSec: 60, key: "ip", autoBlock: { after: 3, withinSec: 60 } }]),
    // Refused only when the limiters are built: two tables that together exceed the isolate's budget.
    route([
      { name: "a", algorithm: "sliding-log", limit: 100, windowSec: 60, key: "ip", keyCapacity: 70_000 },
      { name: "b", algorithm: "sliding-log", limit: 100, windowSec: 60, key: "user", keyCapacity: 70_000 },
    ]),
  ];
  const fields = [];
  for (const config of cases) {
    const expected = startUpMessage(config);
    assert.notEqual(expected, null, "start-up refuses it");
    const run = check(config);
    assert.equal(run.status, 1);
    assert.equal(run.stderr, expected);
    fields.push(/: (routes\[[^:]*):/.exec(run.stderr)?.[1]);
  }
  assert.deepEqual(fields, ["routes[0].rules[0].limit", "routes[0].rules[0].windowsec", "routes[0].rules[0].autoBlock.blockSec", "routes[0].rules[1].keyCapacity"]);
});

test("a file that is not JSON, or not there, exits 1 saying so; a second file is a usage error (2)", () => {
  const broken = check("{ routes: [", "broken.json");
  assert.equal(broken.status, 1);
  assert.match(broken.stderr, /broken\.json is not valid JSON/);
  const missing = spawnSync(process.execPath, [cli, "check", path.join(dir, "missing.json")], { encoding: "utf8" });
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /missing\.json cannot be read \(ENOENT\)/);
  assert.equal(spawnSync(process.execPath, [cli, "check", "a.json", "b.json"], { encoding: "utf8" }).status, 2);
});
