#!/usr/bin/env bash
# Compiles the core to wasm-bindings/sluice.wasm with Emscripten (standalone, no JS glue).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-tools.sh
# emcmake announces its cmake command line on stderr; keep it (and any error) in a log shown on failure.
mkdir -p build
if ! emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >build/wasm-configure.log 2>&1; then
  cat build/wasm-configure.log >&2
  exit 1
fi
cmake --build build/wasm -j2 >/dev/null
cp build/wasm/sluice.wasm wasm-bindings/sluice.wasm
raw=$(wc -c < wasm-bindings/sluice.wasm)
gz=$(gzip -9 -c wasm-bindings/sluice.wasm | wc -c)
echo "sluice.wasm: $raw bytes, $gz gzipped"
