// Run by scripts/prepack.sh before npm packs: every file package.json's "exports" and "imports" point
// at must exist, and the core must be a wasm module that is not empty. Exits non-zero, naming what is
// missing, so `npm pack` and `npm publish` stop instead of shipping a package that cannot load.
import { existsSync, readFileSync, statSync } from "node:fs";

const root = new URL("../", import.meta.url);
const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));

// Every string target of a conditional-exports tree.
function targets(entry) {
  if (typeof entry === "string") return [entry];
  return Object.values(entry).flatMap(targets);
}

const wanted = new Set([...targets(pkg.exports), ...targets(pkg.imports ?? {}), "./wasm-bindings/sluice.wasm"]);
const missing = [...wanted].filter((path) => !existsSync(new URL(path, root)));
const problems = missing.map((path) => `${path} is missing`);

const wasm = new URL("wasm-bindings/sluice.wasm", root);
if (existsSync(wasm)) {
  const bytes = readFileSync(wasm);
  if (statSync(wasm).size < 8 || bytes.readUInt32BE(0) !== 0x0061736d) problems.push("wasm-bindings/sluice.wasm is not a wasm module");
}

if (problems.length > 0) {
  console.error(`sluice: refusing to pack:\n  ${problems.join("\n  ")}\n(npm run build makes the .wasm)`);
  process.exit(1);
}
