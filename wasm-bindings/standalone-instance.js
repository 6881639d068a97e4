// An instance of a standalone module (sluice.wasm, sluice-replay.wasm: no JS glue) for a class that
// reads its memory itself: the two imports such a module asks for. Growing the memory detaches its
// ArrayBuffer, so `onGrowth` rebuilds the caller's views before its next read.

/**
 * @param {WebAssembly.Module} module
 * @param {string} name The module's file, for the error of an exit.
 * @param {() => void} onGrowth
 * @returns {WebAssembly.Instance}
 */
export function standaloneInstance(module, name, onGrowth) {
  return new WebAssembly.Instance(module, {
    env: { emscripten_notify_memory_growth: onGrowth },
    wasi_snapshot_preview1: {
      /** @param {number} code */
      proc_exit(code) {
        throw new Error(`${name} exited with code ${code}`);
      },
    },
  });
}
