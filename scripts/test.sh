#!/usr/bin/env bash
# npm test: build everything and run every test, C++ and JS.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-tools.sh
bash scripts/test-cpp.sh
bash scripts/build-wasm.sh
# The declarations the type tests (test/js/types.test.js) compile against, generated from the JSDoc.
node scripts/build-types.js
echo "== JS tests (the .wasm under Node, the Worker under miniflare)"
node --test --test-concurrency=2 test/js/
