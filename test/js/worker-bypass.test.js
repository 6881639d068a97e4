// The dev bypass (engine/bypass.js): on only for the Worker's ENV=dev AND a request to a loopback host;
// it still checks the store's bindings, logs once per isolate that limits are off, and its header
// names no variable.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const { createLimiter, SluiceConfigError } = await import("../../worker/src/sluice.js");
const { durableStore } = await import("../../worker/src/stores/kinds/durable.js");
const { redisStore } = await import("../../worker/src/stores/kinds/redis.js");
const { isLoopbackHost } = await import("../../worker/src/engine/bypass.js");

const dev = { ENV: "dev" };
const local = (path = "/") => new Request(`http://localhost:8787${path}`);

test("only a loopback host lets ENV=dev bypass: localhost, *.localhost, 127.0.0.0/8, [::1]", async () => {
  for (const host of ["localhost", "app.localhost", "127.0.0.1", "127.1.2.3", "[::1]"]) assert.equal(isLoopbackHost(host), true, host);
  for (const host of ["example.com", "localhost.example.com", "127.0.0.1.nip.io", "10.0.0.1", "[::2]", "my-worker.workers.dev"]) assert.equal(isLoopbackHost(host), false, host);

  const limiter = createLimiter({ key: "k", limit: 1, windowSec: 60 });
  const onLoopback = await limiter.limit(local(), dev);
  assert.equal(onLoopback.bypassed, true);
  assert.deepEqual(limiter.headers(onLoopback), [["X-RateLimit-Bypassed", "true"]]);
  const deployed = [];
  for (let i = 0; i < 2; i++) deployed.push(await limiter.limit(new Request("https://api.example.com/"), dev));
  assert.deepEqual(deployed.map((decision) => [decision.bypassed, decision.allowed]), [[false, true], [false, false]]);
});

test("a bypassed request still has its store's bindings checked: a missing binding fails as when deployed", async () => {
  const durable = createLimiter({ key: "k", limit: 5, windowSec: 60, store: durableStore, fallback: [] });
  await assert.rejects(durable.limit(local(), dev), (error) => error instanceof SluiceConfigError && error.field === "bindings.durable");
  const redis = createLimiter({ key: "k", limit: 5, windowSec: 60, store: redisStore });
  await assert.rejects(redis.limit(local(), dev), (error) => error instanceof SluiceConfigError && error.field === "bindings.redisUrl");
  await assert.rejects(
    redis.limit(local(), { ...dev, UPSTASH_REDIS_REST_URL: "https://r.example" }),
    (error) => error instanceof SluiceConfigError && error.field === "bindings.redisToken",
  );
  // Bound, it bypasses (nothing is asked of the object).
  const bound = await durable.limit(local(), { ...dev, SLUICE_DO: { idFromName() {}, get() {} } });
  assert.equal(bound.bypassed, true);
});

test("an isolate logs once that limits are off, however many requests and limiters the bypass lets through", () => {
  // A process of its own: the log is once per isolate (module instance).
  const limiterModule = fileURLToPath(new URL("../../worker/src/sluice.js", import.meta.url));
  const script = `
    const { createLimiter } = await import(${JSON.stringify(limiterModule)});
    const limiters = [createLimiter({ key: "a", limit: 1, windowSec: 60 }), createLimiter({ key: "b", limit: 1, windowSec: 60 })];
    for (let i = 0; i < 5; i++) for (const limiter of limiters) await limiter.limit(new Request("http://localhost/"), { ENV: "dev" });
    await limiters[0].limit(new Request("https://api.example.com/"), { ENV: "dev" });`;
  const { status, stderr } = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(status, 0, stderr);
  const lines = stderr.split("\n").filter((line) => line.includes("rate limits are OFF"));
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0], /ENV=dev and the request is to a loopback host/);
});
