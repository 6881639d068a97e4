#!/usr/bin/env bash
# Builds the core natively and runs its Catch2 tests, then again under ASan + UBSan, then fuzzes the
# C ABI for a bounded time (scripts/fuzz.sh, SLUICE_FUZZ_SECONDS, default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-tools.sh
for variant in native sanitize; do
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
  [ "$variant" = sanitize ] && flags+=(-DSLUICE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
  cmake -S . -B "build/$variant" "${flags[@]}" >/dev/null
  cmake --build "build/$variant" -j2 >/dev/null
  echo "== C++ tests ($variant)"
  (cd "build/$variant" && ctest --output-on-failure -j2)
done
bash scripts/fuzz.sh
