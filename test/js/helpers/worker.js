// Builds Workers for the tests and runs them in workerd through miniflare's Node API.
//
// esbuild (the bundler wrangler itself uses) bundles an entry with its npm imports (hono); the core's
// .wasm stays a separate CompiledWasm module, imported as wrangler would import it. Each build is done
// once per test process and reused by every Miniflare the process starts.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";

// wrangler's own esbuild, resolved from wrangler so the tests bundle exactly as `wrangler dev` does
// (and need no dependency of their own).
const requireFromWrangler = createRequire(createRequire(import.meta.url).resolve("wrangler/package.json"));
const { build } = requireFromWrangler("esbuild");

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const WASM_PATH = `${ROOT}wasm-bindings/sluice.wasm`;
const COMPATIBILITY_DATE = "2026-04-20";

/** The Worker entries tests can run, relative to the repository root. */
export const ENTRIES = Object.freeze({
  demo: "worker/index.js",
  fixture: "test/js/helpers/fixture-worker.js",
  gateway: "test/js/fixtures/gateway/worker.js",
  lockout: "test/js/fixtures/lockout/worker.js",
  lockoutGateway: "test/js/fixtures/lockout/gateway-worker.js",
  concurrency: "test/js/fixtures/concurrency/worker.js",
  stores: "test/js/fixtures/stores/worker.js",
  planet: "test/js/fixtures/planet/worker.js",
  planetLeases: "test/js/fixtures/planet-leases/worker.js",
  planetFigure: "test/js/fixtures/planet-figure/worker.js",
  responseCount: "test/js/fixtures/response-count/worker.js",
  autoBlock: "test/js/fixtures/auto-block/worker.js",
  overrides: "test/js/fixtures/overrides/worker.js",
});

/** The module a Worker built from the gateway fixture imports its bundled configuration from. */
export const CONFIG_MODULE = "/config.js";

const bundles = new Map();

// The gateway fixture's `import bundled from "./config.json"` stays a module of its own, so that each
// test can start the same bundle with a configuration of its own (configModule below).
const configAsModule = {
  name: "config-as-module",
  setup(builder) {
    builder.onResolve({ filter: /^\.\/config\.json$/ }, (args) =>
      args.importer.endsWith(`${ENTRIES.gateway}`) ? { path: `.${CONFIG_MODULE}`, external: true } : undefined,
    );
  },
};

/** configModule is the module CONFIG_MODULE holding `config`, for workerOptions' extraModules. */
export function configModule(config) {
  return { type: "ESModule", path: CONFIG_MODULE, contents: `export default ${JSON.stringify(config)};\n` };
}

// Every import of a .wasm file becomes the one "./sluice.wasm" module beside the bundle.
const wasmAsModule = {
  name: "wasm-as-module",
  setup(builder) {
    builder.onResolve({ filter: /\.wasm$/ }, () => ({ path: "./sluice.wasm", external: true }));
  },
};

/** bundle returns the ES module text of `entry` (a key of ENTRIES), built once per process. */
export function bundle(entry) {
  if (!bundles.has(entry)) {
    bundles.set(
      entry,
      build({
        entryPoints: [`${ROOT}${ENTRIES[entry]}`],
        bundle: true,
        write: false,
        format: "esm",
        platform: "neutral",
        target: "es2022",
        conditions: ["workerd", "worker", "browser"],
        mainFields: ["module", "main"],
        plugins: [wasmAsModule, configAsModule],
        // workerd provides the runtime modules (the Durable Object base class comes from cloudflare:workers).
        external: ["cloudflare:*"],
        logLevel: "silent",
      }).then((result) => result.outputFiles[0].text),
    );
  }
  return bundles.get(entry);
}

/**
 * workerOptions describes one Worker of a Miniflare: `name`, built from `entry`, with `bindings`
 * (plain vars and secrets such as ENV), `extraModules` beside the bundle (configModule(...)) and, as
 * miniflare takes them, `durableObjects`, `kvNamespaces` and `serviceBindings`.
 */
export async function workerOptions({ name, entry, bindings = {}, extraModules = [], durableObjects, kvNamespaces, serviceBindings }) {
  return {
    ...(durableObjects === undefined ? {} : { durableObjects }),
    ...(kvNamespaces === undefined ? {} : { kvNamespaces }),
    ...(serviceBindings === undefined ? {} : { serviceBindings }),
    name,
    modulesRoot: "/",
    modules: [
      { type: "ESModule", path: "/worker.js", contents: await bundle(entry) },
      { type: "CompiledWasm", path: "/sluice.wasm", contents: readFileSync(WASM_PATH) },
      ...extraModules,
    ],
    compatibilityDate: COMPATIBILITY_DATE,
    bindings,
  };
}

/**
 * startWorkers starts one Miniflare running `workers` (each a workerOptions() argument), each in its
 * own isolate. The first is the default target of mf.dispatchFetch; mf.getWorker(name) reaches any.
 */
export async function startWorkers(workers) {
  return new Miniflare({ workers: await Promise.all(workers.map(workerOptions)) });
}

/**
 * storeBindings binds SLUICE_DO and SLUICE_KV as wrangler.toml does, for a Worker of a Miniflare:
 * the Durable Object class `className` is defined by the Worker `home` (pass the Worker's own name
 * there) and reached by the others, so every isolate shares one namespace, and one KV namespace.
 */
export function storeBindings(name, home, className) {
  const object = name === home ? { className, useSQLite: true } : { className, scriptName: home, useSQLite: true };
  return { durableObjects: { SLUICE_DO: object }, kvNamespaces: { SLUICE_KV: "sluice-kv" } };
}

/**
 * startIsolatesOnOneObject starts `count` isolates running the fixture Worker `entry` in production
 * mode, all on one Durable Object namespace (TestSluiceDurableObject, defined by the first), and
 * returns the Miniflare and a fetcher per isolate.
 * @param {number} count
 * @param {string} entry
 */
export async function startIsolatesOnOneObject(count, entry) {
  const workers = [];
  for (let i = 0; i < count; i++) {
    const name = `w${i}`;
    workers.push({ name, entry, bindings: { ENV: "production" }, ...storeBindings(name, "w0", "TestSluiceDurableObject") });
  }
  const mf = await startWorkers(workers);
  const isolates = [];
  for (let i = 0; i < count; i++) isolates.push(await mf.getWorker(`w${i}`));
  return { mf, isolates };
}

/** A request from a client at `ip` (Cloudflare's cf-connecting-ip), with any extra headers. */
export function from(ip, headers = {}, init = {}) {
  return { ...init, headers: { "cf-connecting-ip": ip, ...headers } };
}
