// The remote stores are values an app imports (sluice/stores/durable, /kv, /redis), so an app that uses
// memory only bundles none of them; their names keep working once their module has loaded. This file
// runs in a process of its own (node --test), so nothing has loaded them before its first test.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const { createLimiter, SluiceConfigError, storeStats } = await import("../../worker/src/sluice.js");

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const { build } = createRequire(createRequire(import.meta.url).resolve("wrangler/package.json"))("esbuild");

test("a remote store named before its module loaded is refused, naming `store` and the import that brings it", () => {
  for (const name of ["durable", "kv", "redis"]) {
    assert.throws(
      () => createLimiter({ key: "k", limit: 5, windowSec: 60, store: name }),
      (error) => error instanceof SluiceConfigError && error.field === "store" && error.message.includes(`import { ${name}Store } from "sluice/stores/${name}"`),
    );
  }
});

test("a store kind passed as a value builds its chain; its name then builds the same shared chain", async () => {
  const { kvStore } = await import("../../worker/src/stores/kinds/kv.js");
  const before = storeStats().length;
  createLimiter({ key: "k", limit: 5, windowSec: 60, store: kvStore, timeoutMs: 41 });
  createLimiter({ key: "k", limit: 7, windowSec: 60, store: "kv", timeoutMs: 41 });
  const built = storeStats().slice(before);
  assert.deepEqual(built.map((chain) => [chain.store, chain.timeoutMs]), [["kv", 41]], "one chain for both spellings");
  // A kind's settings are checked as the name's are.
  assert.throws(() => createLimiter({ key: "k", limit: 5, windowSec: 60, store: kvStore, shards: 2 }), (error) => error instanceof SluiceConfigError && error.field === "shards");
});

// The bundle esbuild (wrangler's bundler) makes of `source`, as the files that put bytes in it.
async function bundledFiles(source) {
  const result = await build({
    stdin: { contents: source, resolveDir: ROOT, loader: "js" },
    bundle: true,
    write: false,
    minify: true,
    metafile: true,
    format: "esm",
    platform: "neutral",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["*.wasm", "cloudflare:*"],
    logLevel: "silent",
  });
  const [output] = Object.values(result.metafile.outputs);
  return Object.entries(output.inputs)
    .filter(([, { bytesInOutput }]) => bytesInOutput > 0)
    .map(([path]) => path);
}

const REMOTE = /worker\/src\/stores\/(durable|kv|redis|leases|chain|remote|breaker|upstash-rest|redis-cas-script)\.js$/;

test("README's quick start (memory) bundles no remote store; an app naming kvStore bundles KV and not Redis nor the Durable Object", async () => {
  const quickStart = await bundledFiles(`
    import { Hono } from "hono";
    import { rateLimit, ip } from "./worker/src/hono.js";
    const app = new Hono();
    app.use("/api/*", rateLimit({ key: ip(), limit: 120, windowSec: 60 }));
    export default app;`);
  assert.deepEqual(quickStart.filter((path) => REMOTE.test(path)), []);
  assert.ok(quickStart.includes("worker/src/stores/memory.js"), "the memory store is bundled");

  const withKv = await bundledFiles(`
    import { createLimiter } from "./worker/src/sluice.js";
    import { kvStore } from "./worker/src/stores/kinds/kv.js";
    export default createLimiter({ key: "k", limit: 5, windowSec: 60, store: kvStore });`);
  const remote = withKv.filter((path) => REMOTE.test(path)).map((path) => path.replace("worker/src/stores/", "")).sort();
  assert.deepEqual(remote, ["breaker.js", "chain.js", "kv.js", "remote.js"]);
});
