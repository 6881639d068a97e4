#!/usr/bin/env bash
# Builds bench/native/driver.cpp against the core (optimised, with symbols) and profiles one workload:
#   bash bench/native/profile.sh [callgrind|perf|time] <hot|uniform|zipf> <keys> <decisions> [algorithm]
# callgrind writes bench/.work/callgrind.out.<workload> and prints the top functions.
set -euo pipefail
cd "$(dirname "$0")/../.."
tool="${1:-time}"
shift || true
mkdir -p bench/.work
binary=bench/.work/sluice-driver
sources=(cpp/src/*.cpp cpp/src/algorithms/*.cpp bench/native/driver.cpp)
if [ ! -x "$binary" ] || [ -n "$(find "${sources[@]}" cpp/include -newer "$binary" | head -1)" ]; then
  g++ -std=c++20 -O3 -g -DNDEBUG -Icpp/include -Icpp/src "${sources[@]}" -o "$binary"
fi
workload=("${@:-uniform 1000000 2000000}")
case "$tool" in
  callgrind)
    out="bench/.work/callgrind.out.${1:-uniform}"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$binary" "$@"
    callgrind_annotate "$out" | head -40
    ;;
  perf)
    perf stat -e task-clock,cycles,instructions,cache-misses,L1-dcache-load-misses,dTLB-load-misses "$binary" "$@"
    ;;
  time)
    "$binary" "$@"
    ;;
  *)
    echo "unknown tool $tool (callgrind, perf or time)" >&2
    exit 2
    ;;
esac
