// For the type check of the sources only (tsconfig.json), never shipped: wrangler and miniflare's
// CompiledWasm rule make `import wasmModule from "./sluice.wasm"` a WebAssembly.Module, which no
// JSDoc can say of a file the compiler does not read.
declare module "*.wasm" {
  const wasmModule: WebAssembly.Module;
  export default wasmModule;
}
