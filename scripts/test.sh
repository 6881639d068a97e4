#!/usr/bin/env bash
# npm test: build everything and run every test: C++, JS, and the examples built from the packed tarball.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-tools.sh
bash scripts/test-cpp.sh
bash scripts/build-wasm.sh
# The declarations the type tests (test/js/types.test.js) compile against, generated from the JSDoc.
node scripts/build-types.js
echo "== JS tests (the .wasm under Node, the Worker under miniflare)"
node --test --test-concurrency=2 test/js/
# The package as users get it: packed, installed into each of examples/ outside the repository, built
# with wrangler and tested there (scripts/test-examples.sh).
bash scripts/test-examples.sh
