// What an app pays for sluice, in minified JavaScript as `wrangler deploy --dry-run --minify` bundles
// it (sizes, never times). The .wasm (about 45 KB) comes on top, as a module of its own.
//
// Issue 20 asks for the quick start to add at most 20 KiB to a bare Hono app and for createLimiter alone
// to stay within 15 KiB. Measured when this test was written: +38.7 KiB and 34.3 KiB (from about +68
// and 68.2 KiB of JS, 112.7 and 112.6 KiB with the .wasm, when the remote stores were in every bundle;
// 35.6 and 31.1 KiB before the header modes, the dev bypass's checks, "did you mean" and the accuracy
// and fallback options joined the engine). The ceilings below keep what was won
// and fail when a store or feature creeps back into an app that does not import it; the floors the
// issue asks for are printed beside them, not yet met: most of what is left is the engine's option
// validation (options.js, about 9 KiB) and the core's loader (wasm-bindings/sluice.js, about 8 KiB).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

const KiB = 1024;
const out = mkdtempSync(join(tmpdir(), "sluice-bundle-size-"));

// The minified JavaScript of one entry (the .wasm beside it is not counted), and the files it holds.
function build(entry) {
  const dir = join(out, entry);
  const metafile = join(out, `${entry}.meta.json`);
  execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--minify", "--outdir", dir, "--metafile", metafile, `src/${entry}.js`], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" },
  });
  const js = readdirSync(dir).filter((name) => name.endsWith(".js"));
  const bytes = js.reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
  const meta = JSON.parse(readFileSync(metafile, "utf8"));
  // The files that put bytes into the bundle (the metafile also lists those tree-shaking dropped).
  const output = Object.values(meta.outputs).find((entry) => entry.entryPoint !== undefined);
  const inputs = Object.entries(output.inputs)
    .filter(([, { bytesInOutput }]) => bytesInOutput > 0)
    .map(([path]) => path.replace(/^.*node_modules\/sluice\//, "sluice/"));
  return { bytes, inputs };
}

const report = (what, bytes, ceiling, floor) =>
  console.log(`${what}: ${(bytes / KiB).toFixed(1)} KiB (ceiling ${ceiling / KiB} KiB; issue 20's floor ${floor / KiB} KiB: ${bytes <= floor ? "met" : "not met"})`);

test("the quick start bundles no remote store, and adds at most 49 KiB of minified JS to a bare Hono app", () => {
  const bare = build("bare-hono");
  const quick = build("quick-start");
  const added = quick.bytes - bare.bytes;
  report("quick start adds", added, 49 * KiB, 20 * KiB);
  const remote = quick.inputs.filter((path) => /sluice\/worker\/src\/stores\/(durable|kv|redis|leases|chain|remote|breaker|upstash-rest)/.test(path));
  assert.deepEqual(remote, [], "a memory-only app bundles no remote store");
  assert.ok(added <= 49 * KiB, `the quick start adds ${added} bytes`);
});

test("createLimiter alone is at most 39 KiB of minified JS", () => {
  const { bytes, inputs } = build("limiter");
  report("createLimiter alone", bytes, 39 * KiB, 15 * KiB);
  // Overrides are an option of every rule (the engine normalizes them); the features an app imports on
  // purpose must not ride along.
  const riders = inputs.filter((path) => /\/features\/(lockout|concurrency|websocket|lists|accuracy)\//.test(path));
  assert.deepEqual(riders, [], "no feature (lockout, concurrency, websocket, lists, accuracy) rides along");
  assert.ok(bytes <= 39 * KiB, `createLimiter bundles ${bytes} bytes`);
});
