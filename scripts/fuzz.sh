#!/usr/bin/env bash
# Builds the libFuzzer target over the C ABI (fuzz/sluice_abi_fuzz.cpp) with ASan + UBSan and runs it
# for a bounded time: SLUICE_FUZZ_SECONDS (default 60). It starts from the seeds in fuzz/corpus and
# keeps what it finds in build/fuzz/corpus (the repository's corpus is never written). Any broken
# invariant or sanitizer report fails the run and leaves a crash-* file in build/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${SLUICE_FUZZ_SECONDS:-60}"
mkdir -p build/fuzz/corpus
clang++-14 -std=c++20 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Wno-ignored-attributes -Wno-unknown-attributes \
  -DSLUICE_FUZZ_HOOKS -Icpp/include \
  cpp/src/*.cpp cpp/src/algorithms/*.cpp wasm-bindings/sluice_abi.cpp wasm-bindings/logpush_abi.cpp fuzz/sluice_abi_fuzz.cpp \
  -o build/fuzz/sluice_abi_fuzz
echo "== fuzz: the C ABI for ${seconds} s (seeds: fuzz/corpus)"
cd build/fuzz
./sluice_abi_fuzz -max_total_time="$seconds" -print_final_stats=1 -timeout=10 corpus ../../fuzz/corpus 2>fuzz.log || {
  tail -40 fuzz.log >&2
  exit 1
}
grep -E "^stat::number_of_executed_units|^stat::new_units_added" fuzz.log || true
