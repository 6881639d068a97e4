// Bundles the bench Worker and the peers for workerd with esbuild's JS API (esbuild comes with
// wrangler; no bundler of our own). The .wasm stays an external import that miniflare compiles.
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
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
    // bench/.work is as deep as bench/worker, so the relative .wasm import still resolves.
    external: ["*.wasm", "node:*", "cloudflare:*"],
    plugins: [sluiceHonoPlugin],
    logLevel: "warning",
  });
  return outfile;
}
