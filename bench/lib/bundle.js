// Bundles the bench Worker and the peers for workerd with esbuild's JS API (esbuild comes with
// wrangler; no bundler of our own). The .wasm stays an external import that miniflare compiles.
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import * as esbuild from "esbuild";

const root = resolve(dirname(new URL(import.meta.url).pathname), "../..");
export const WORK_DIR = join(root, "bench/.work");
export const SLUICE_HONO = join(root, "worker/src/hono.js");

// `bench:sluice-hono` is the adapter over worker/src/hono.js when that file exists, else a stub that
// reports figure 5's sluice row as pending.
const sluiceHonoPlugin = {
  name: "sluice-hono",
  setup(build) {
    build.onResolve({ filter: /^bench:sluice-hono$/ }, () => ({
      path: existsSync(SLUICE_HONO)
        ? join(root, "bench/worker/sluice-hono.js")
        : join(root, "bench/worker/sluice-hono-pending.js"),
    }));
  },
};

// Every .wasm import stays external (miniflare compiles it), re-pointed from the importing file to the
// bundle's own directory: worker/src and worker/src/stores spell the same module at different depths.
const wasmPlugin = {
  name: "wasm-external",
  setup(build) {
    build.onResolve({ filter: /\.wasm$/ }, (args) => ({
      path: relative(WORK_DIR, resolve(args.resolveDir, args.path)),
      external: true,
    }));
  },
};

// `bench:timed-loops` holds LOOP_COPIES textual copies of workload.js's timeSync and timeAsync, each
// its own function literal, so each has its own type feedback and optimised code. The time route gives
// every scenario of an isolate (slot, distribution, key strings) a copy of its own: with one shared
// loop, its call sites saw every scenario's decide and keyAt, went polymorphic, and stopped inlining
// the limiter into the loop, so a scenario's figure depended on which ran before it in that isolate
// (sluice's reused-strings rows ran at twice its fresh-strings cost, behind two fresh-strings modes).
export const LOOP_COPIES = 16;
const timedLoopsPlugin = {
  name: "timed-loops",
  setup(build) {
    build.onResolve({ filter: /^bench:timed-loops$/ }, () => ({ path: "timed-loops", namespace: "timed-loops" }));
    build.onLoad({ filter: /.*/, namespace: "timed-loops" }, async () => {
      const { timeSync, timeAsync } = await import("../worker/workload.js");
      const copies = (f) => `[\n${Array.from({ length: LOOP_COPIES }, () => f.toString()).join(",\n")}\n]`;
      return {
        contents: `import { CHUNK } from ${JSON.stringify(join(root, "bench/worker/workload.js"))};\n` +
          `export const syncLoops = ${copies(timeSync)};\nexport const asyncLoops = ${copies(timeAsync)};\n`,
        resolveDir: root,
      };
    });
  },
};

/** bundleWorker writes bench/.work/bench-worker.js and returns its path. */
export async function bundleWorker() {
  await mkdir(WORK_DIR, { recursive: true });
  const outfile = join(WORK_DIR, "bench-worker.js");
  await esbuild.build({
    entryPoints: [join(root, "bench/worker/entry.js")],
    outfile,
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    target: "es2022",
    external: ["node:*", "cloudflare:*"],
    plugins: [wasmPlugin, sluiceHonoPlugin, timedLoopsPlugin],
    logLevel: "warning",
  });
  return outfile;
}
