#!/usr/bin/env bash
# Builds sluice.wasm and copies the loader as they are at a git commit, for bench/compare/run.js:
#   bash bench/compare/build-at.sh <commit> <name> [extra emcc flags]
# writes bench/.work/compare/<name>.wasm and <name>-loader.js. The flags are scripts/build-wasm.sh's
# (CMakeLists.txt), so a build of HEAD measures what the bench measures.
set -euo pipefail
cd "$(dirname "$0")/../.."
commit=$1
name=$2
shift 2
out=bench/.work/compare
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git archive "$commit" cpp wasm-bindings | tar -x -C "$src"
mkdir -p "$out"
emcc -std=c++20 -O3 -DNDEBUG -flto -fno-exceptions -fno-rtti -I"$src/cpp/include" -I"$src/cpp/src" \
  "$src/wasm-bindings/sluice_abi.cpp" "$src"/cpp/src/algorithms/*.cpp "$src"/cpp/src/*.cpp \
  --no-entry -sSTANDALONE_WASM -sALLOW_MEMORY_GROWTH=1 -sTOTAL_STACK=64KB -sINITIAL_MEMORY=256KB \
  -sMAXIMUM_MEMORY=64MB -sMALLOC=emmalloc "$@" -o "$out/$name.wasm"
cp "$src/wasm-bindings/sluice.js" "$out/$name-loader.js"
echo "$out/$name.wasm: $(wc -c < "$out/$name.wasm") bytes ($commit)"
