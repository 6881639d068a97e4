#!/usr/bin/env bash
# npm pack / npm publish: build what the tarball carries but git does not (the .wasm, built from cpp/;
# the declarations generated from the JSDoc, when the package has a build:types script), then refuse to
# pack unless every file the package's entries load is there. A tarball without its .wasm installs
# cleanly and fails only in the user's build, so that is checked here, loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wasm.sh
if node -e 'process.exit(require("./package.json").scripts["build:types"] ? 0 : 1)'; then
  npm run --silent build:types
fi
node scripts/check-package.js
