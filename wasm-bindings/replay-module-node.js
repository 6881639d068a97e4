// The compiled Logpush reader of `sluice replay` (sluice-replay.wasm, built from logpush_abi.cpp apart
// from sluice.wasm so that no Worker bundles it), read from the file beside this one and compiled once,
// when first imported. Node only: the CLI is its one user.
import { readFileSync } from "node:fs";

/** The compiled sluice-replay.wasm, a WebAssembly.Module. */
export default new WebAssembly.Module(readFileSync(new URL("./sluice-replay.wasm", import.meta.url)));
