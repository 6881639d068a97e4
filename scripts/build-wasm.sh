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
# sluice.wasm is what Workers bundle; sluice-replay.wasm is the CLI's Logpush reader (sluice replay).
for module in sluice sluice-replay; do
  cp "build/wasm/$module.wasm" "wasm-bindings/$module.wasm"
  raw=$(wc -c < "wasm-bindings/$module.wasm")
  gz=$(gzip -9 -c "wasm-bindings/$module.wasm" | wc -c)
  echo "$module.wasm: $raw bytes, $gz gzipped"
done
