// The compiled core where workerd runs the code (wrangler, miniflare, @cloudflare/vitest-pool-workers):
// the bundler keeps the .wasm a module of its own, which the runtime hands over already compiled.
// workerd refuses to compile wasm from bytes at run time, so this static import is the only way in.
// Chosen by package.json "imports" (#sluice-wasm) under the "workerd" and "worker" conditions.
// @ts-ignore -- a .wasm import has no declaration: wrangler (its CompiledWasm rule) makes it a WebAssembly.Module.
import sluiceWasm from "./sluice.wasm";

/** The compiled sluice.wasm, a WebAssembly.Module. */
export default sluiceWasm;
