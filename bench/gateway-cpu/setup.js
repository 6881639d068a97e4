// What bench/gateway-cpu.js and bench/gateway-loop-cpu.js share: the gateway's configuration in front of
// the Node upstream (gateway-cpu/upstream.js), its secrets, the request headers, and the bundling of a
// Worker that imports that configuration as a module.
import { createRequire } from "node:module";

// wrangler's own esbuild, as the tests bundle.
const requireFromWrangler = createRequire(createRequire(import.meta.url).resolve("wrangler/package.json"));
const { build } = requireFromWrangler("esbuild");

// A credential as long as the (46 characters), and an admin token: every body is masked for both.
export const UPSTREAM_TOKEN = "bench-upstream-secret-7f3a9c1e5b2d4f60a8e1c3b5";
export const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef0123456789ab";
export { HEADERS } from "./headers.js";

/** gatewayConfig is the benches' gateway.config.json, its upstream at `origin` (the Node server). */
export function gatewayConfig(origin) {
  const upstream = (path, extra = {}) => ({
    url: `${origin}${path}`,
    auth: { secret: "UPSTREAM_TOKEN", header: "x-upstream-token" },
    ...extra,
  });
  const everyone = [{ name: "ip", algorithm: "sliding-counter", limit: 1_000_000_000, windowSec: 60, key: "ip" }];
  return {
    routes: [
      { prefix: "/api", methods: ["GET"], upstream: upstream("/api"), rules: everyone },
      { prefix: "/bare-api", methods: ["GET"], upstream: upstream("/api", { bodyTimeoutMs: null }), rules: everyone },
      { prefix: "/optout", methods: ["GET"], upstream: upstream("/api", { maskBody: "never" }), rules: everyone },
      { prefix: "/deadline-api", methods: ["GET"], upstream: upstream("/api", { bodyTimeoutMs: null, bodyDeadlineMs: 600_000 }), rules: everyone },
      { prefix: "/deadline-optout", methods: ["GET"], upstream: upstream("/api", { bodyTimeoutMs: null, bodyDeadlineMs: 600_000, maskBody: "never" }), rules: everyone },
      { prefix: "/limited", methods: ["GET"], upstream: upstream("/api"), rules: [{ name: "limited", algorithm: "fixed-window", limit: 1, windowSec: 3600, key: "ip" }] },
    ],
    admin: { path: "/admin/metrics", tokenSecret: "SLUICE_ADMIN_TOKEN" },
  };
}

// The configuration is a module of its own (/bench-config.js) and the .wasm the Worker's CompiledWasm module.
const configAsModule = {
  name: "config-as-module",
  setup(builder) {
    builder.onResolve({ filter: /^bench:gateway-config$/ }, () => ({ path: "./bench-config.js", external: true }));
    builder.onResolve({ filter: /\.wasm$/ }, () => ({ path: "./sluice.wasm", external: true }));
  },
};

/** bundleWorker returns the ES module text of the Worker at `entry` (an absolute path), as wrangler would bundle it. */
export async function bundleWorker(entry) {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    plugins: [configAsModule],
    external: ["cloudflare:*"],
    logLevel: "silent",
  });
  return result.outputFiles[0].text;
}
