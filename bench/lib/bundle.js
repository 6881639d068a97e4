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
    plugins: [wasmPlugin, sluiceHonoPlugin],
    logLevel: "warning",
  });
  return outfile;
}
