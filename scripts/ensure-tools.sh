#!/usr/bin/env bash
# Installs whatever this machine lacks to build and test sluice: Emscripten, Catch2, nlohmann-json,
# CMake, a C++ compiler, clang 14 with libFuzzer, redis-server (the Redis store's tests start one)
# and chromium (the dashboard is tested in a real browser)
# from Debian's packages, and the npm dependencies. Safe to run every time: it does nothing when
# everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v emcc >/dev/null 2>&1 || missing+=(emscripten)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
[ -f /usr/include/catch2/catch.hpp ] || missing+=(catch2)
[ -f /usr/include/nlohmann/json.hpp ] || missing+=(nlohmann-json3-dev)
# The fuzz target (scripts/fuzz.sh): clang 14 with libFuzzer, whose runtime is in libclang-rt-14-dev.
command -v clang++-14 >/dev/null 2>&1 || missing+=(clang-14)
compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null || missing+=(libclang-rt-14-dev)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# The dashboard's browser test (test/js/dashboard.test.js) drives Debian's Chromium headless.
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  echo "sluice: installing ${missing[*]} from Debian's packages" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "sluice: Node.js 20 or later is needed (found $(node --version))" >&2
  exit 1
fi

# npm ci when node_modules is missing or older than the lock file. Its progress and summary stay on
# screen (the first install takes a minute or two); package.json's allowScripts lists every install
# script of the tree, so npm has nothing to warn about.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "sluice: installing npm dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
fi
