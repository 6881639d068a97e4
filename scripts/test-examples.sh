#!/usr/bin/env bash
# npm test's last step (also `npm run test:examples`): pack sluice as npm would publish it, install the
# tarball into a copy of each example under a temporary directory outside the repository (so nothing
# resolves from the repository's own node_modules), and run what a user would: wrangler deploy
# --dry-run, tsc for the TypeScript example, and each example's own tests. One npm cache is shared and
# each example is installed once; the examples run one after another.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-examples.XXXXXX")
trap 'rm -rf "$work"' EXIT
export CI=1 WRANGLER_SEND_METRICS=false NO_COLOR=1

echo "== examples: npm pack (prepack builds the .wasm and the declarations, and checks them)"
npm pack --silent --pack-destination "$work" >/dev/null
tarball=$(ls "$work"/sluice-*.tgz)

# What the tarball must and must not hold.
contents=$(tar -tzf "$tarball")
for wanted in package/wasm-bindings/sluice.wasm package/wasm-bindings/sluice-replay.wasm package/types/worker/src/hono.d.ts package/LICENSE package/README.md package/CHANGELOG.md package/docs/options.md package/docs/testing.md package/gateway.config.schema.json; do
  grep -qx "$wanted" <<<"$contents" || { echo "examples: the tarball lacks $wanted" >&2; exit 1; }
done
# worker/gateway/ ships for `sluice replay --config` (worker/cli/), which runs the gateway's own routing
# and rules; the demo and the gateway's docs do not.
if grep -E '^package/(test|bench|cpp|examples|scripts)/|^package/docs/(gateway|demo)\.md$|^package/worker/demo/|\.cpp$|\.hpp$|wrangler\.toml$|gateway\.config\.json$' <<<"$contents"; then
  echo "examples: the tarball holds files a user does not need (above)" >&2
  exit 1
fi
echo "examples: $(wc -l <<<"$contents") files, $(wc -c <"$tarball") bytes packed"
# Every link of README.md, CHANGELOG.md and the shipped docs resolves inside the installed package.
mkdir -p "$work/unpacked" && tar -xzf "$tarball" -C "$work/unpacked"
node scripts/check-package-links.js "$work/unpacked/package"

for example in hono-js hono-ts fetch-handler durable vitest-pool-workers testing bundle-size; do
  echo "== examples/$example (from the tarball)"
  mkdir -p "$work/$example"
  (cd "examples/$example" && tar --exclude=node_modules --exclude=dist --exclude=.wrangler -cf - .) | tar -xf - -C "$work/$example"
  (
    cd "$work/$example"
    npm install --no-audit --no-fund --prefer-offline --loglevel=error "$tarball"
    npm test
  )
done

# Plain Node, outside any test runner, in the example that has no hono installed: "sluice" loads its
# .wasm from the package's file and decides with the memory store.
echo "== plain node: import(\"sluice\") in examples/fetch-handler"
(
  cd "$work/fetch-handler"
  test ! -e node_modules/hono || { echo "examples: fetch-handler must not have hono installed" >&2; exit 1; }
  node -e '
    import("sluice").then(async ({ createLimiter }) => {
      const limiter = createLimiter({ key: "k", limit: 2, windowSec: 60 });
      const seen = [];
      for (let i = 0; i < 3; i++) seen.push((await limiter.limit(new Request("http://x.test/"), {}, undefined)).allowed);
      if (seen.join() !== "true,true,false") throw new Error(`expected two admitted then one denied, got ${seen}`);
      console.log("plain node: admitted, admitted, denied (memory store)");
    }).catch((error) => { console.error(error); process.exit(1); });'
)
# The command line from the tarball, as a user runs it (npx sluice replay): 30 requests of one client
# in a minute, gzip, through a --rule and through a gateway configuration (worker/gateway must be in
# the package for that); 10 per minute admits 10 and would deny 20.
echo "== npx sluice replay in examples/fetch-handler"
(
  cd "$work/fetch-handler"
  node -e '
    const { gzipSync } = require("node:zlib");
    const t = Date.UTC(2026, 11, 1, 10, 0, 0);
    const lines = Array.from({ length: 30 }, (_, i) => JSON.stringify({ EdgeStartTimestamp: (t + i * 1000) * 1e6, ClientIP: "203.0.113.7", ClientRequestHost: "shop.example", ClientRequestMethod: "GET", ClientRequestURI: "/api/items?page=" + i, EdgeResponseStatus: 200 }));
    require("node:fs").writeFileSync("requests.log.gz", gzipSync(lines.join("\n") + "\nnot json\n"));
    require("node:fs").writeFileSync("replay.config.json", JSON.stringify({ routes: [{ prefix: "/api", methods: ["GET"], upstream: { url: "https://upstream.example/api" }, rules: [{ name: "api", algorithm: "fixed-window", limit: 10, windowSec: 60, key: "ip" }] }] }));'
  npx --no-install sluice replay --rule "ip 10/60s fixed-window" --json requests.log.gz > rule.json
  npx --no-install sluice replay --config replay.config.json --json - < requests.log.gz > config.json
  node -e '
    for (const file of ["rule.json", "config.json"]) {
      const { lines, badLines, rules } = JSON.parse(require("node:fs").readFileSync(file, "utf8"));
      if (lines.replayed !== 30 || lines.unparseable !== 1 || !badLines[0].endsWith(":31") || rules[0].admitted !== 10 || rules[0].limited !== 20) {
        throw new Error(`${file}: expected 30 replayed, line 31 unparseable, 10 admitted, 20 would deny; got ${JSON.stringify({ lines, badLines, admitted: rules[0].admitted, limited: rules[0].limited })}`);
      }
    }
    console.log("npx sluice replay: 10 admitted, 20 would deny, line 31 unparseable (--rule and --config)");'
)
# npx sluice check from the tarball: a configuration that starts (naming the package's schema, as a
# user's file would) exits 0; one start-up refuses exits 1 with the message naming the field.
echo "== npx sluice check in examples/fetch-handler"
(
  cd "$work/fetch-handler"
  test -f node_modules/sluice/gateway.config.schema.json || { echo "examples: the installed package lacks gateway.config.schema.json" >&2; exit 1; }
  node -e '
    const route = (limit) => ({ $schema: "./node_modules/sluice/gateway.config.schema.json", routes: [{ prefix: "/api", methods: ["GET"], upstream: { url: "https://upstream.example/api" }, rules: [{ name: "api", algorithm: "fixed-window", limit, windowSec: 60, key: "ip", autoBlock: { after: 5, withinSec: 60, blockSec: 600 } }] }] });
    require("node:fs").mkdirSync("bad", { recursive: true });
    require("node:fs").writeFileSync("gateway.config.json", JSON.stringify(route(10)));
    require("node:fs").writeFileSync("bad/gateway.config.json", JSON.stringify(route(0)));'
  npx --no-install sluice check gateway.config.json
  set +e
  message=$(npx --no-install sluice check bad/gateway.config.json 2>&1)
  status=$?
  set -e
  expected="invalid gateway configuration (gateway.config.json): routes[0].rules[0].limit: must be a whole number from 1 to 2147483648; got 0"
  if [ "$status" != 1 ] || [ "$message" != "$expected" ]; then
    echo "examples: npx sluice check of a bad configuration: exit $status, said: $message" >&2
    exit 1
  fi
  echo "npx sluice check: exit 0 for a valid configuration, exit 1 naming routes[0].rules[0].limit for a bad one"
)
echo "examples: all passed ($repo/examples) in ${SECONDS} s"
