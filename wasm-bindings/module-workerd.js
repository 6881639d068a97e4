// The compiled core where workerd runs the code (wrangler, miniflare, @cloudflare/vitest-pool-workers):
// the bundler keeps the .wasm a module of its own, which the runtime hands over already compiled.
// workerd refuses to compile wasm from bytes at run time, so this static import is the only way in.
// Chosen by package.json "imports" (#sluice-wasm) under the "workerd" and "worker" conditions; the
// type check reads the import through wasm-module.d.ts.
import compiled from "./sluice.wasm";

/** The compiled sluice.wasm. */
const sluiceWasm = /** @type {WebAssembly.Module} */ (compiled);
export default sluiceWasm;
