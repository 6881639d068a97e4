// The compiled core under Node and runtimes that resolve like it (plain node, vitest, jest, Deno):
// they cannot import a .wasm file as a module, so this reads the file beside it and compiles it, once,
// when first imported. Chosen by package.json "imports" (#sluice-wasm) under the "node" condition.
import { readFileSync } from "node:fs";

/** The compiled sluice.wasm, a WebAssembly.Module. */
export default new WebAssembly.Module(readFileSync(new URL("./sluice.wasm", import.meta.url)));
