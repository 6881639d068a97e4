#!/usr/bin/env bash
# npm start: build the wasm core and serve the Worker under wrangler dev, on local storage.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wasm.sh
export CI="${CI:-1}"  # no interactive prompts, no telemetry question
exec npx wrangler dev --ip "${HOST:-127.0.0.1}" --port "${PORT:-8787}" --persist-to .wrangler/state "$@"
