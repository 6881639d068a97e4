// A Node module-loader hook: `import m from "x.wasm"` yields a WebAssembly.Module, as wrangler's
// CompiledWasm rule does in a Worker. Registered by node-wasm.js.
export async function load(url, context, nextLoad) {
  if (url.endsWith(".wasm")) {
    return {
      format: "module",
      shortCircuit: true,
      source: `import { readFileSync } from "node:fs";\nexport default new WebAssembly.Module(readFileSync(new URL(${JSON.stringify(url)})));\n`,
    };
  }
  return nextLoad(url, context);
}
