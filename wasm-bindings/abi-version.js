// The ABI version of sluice.wasm this package's loaders speak (sluice_abi.h's SLUICE_ABI_VERSION, which
// the module reports through sluice_abi_version). A file of its own so that the secret scan's loader
// checks it without bundling the limiter's.
/** ABI version this loader speaks; the module's must match. */
export const ABI_VERSION = /** @type {const} */ (8);
