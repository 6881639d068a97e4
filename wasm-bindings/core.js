// sluice/core: the core's loader for library authors, with the compiled module that goes with it.
// SluiceCore.instantiate(sluiceWasm) gives a limiter of its own (rules, key tables, state bytes) in any
// runtime the package loads in: #sluice-wasm is the static .wasm import under workerd and the file
// read and compiled under Node (package.json "imports").
import compiled from "#sluice-wasm";

export { ABI_VERSION, ALGORITHMS, MAX_CHECKS_PER_CALL, MAX_KEY_BYTES, SluiceCore, SluiceError, Status } from "./sluice.js";

/** sluiceWasm is the compiled sluice.wasm, for SluiceCore.instantiate. */
export const sluiceWasm = /** @type {WebAssembly.Module} */ (compiled);
