// The layout's one rule that code can check: the library (worker/src/, what the package ships) imports
// only itself and the wasm bindings. The gateway and the demo (worker/gateway/, worker/demo/) build on the
// library, never the other way round, so a package user never loads gateway code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const library = path.join(root, "worker/src");
const allowed = [library, path.join(root, "wasm-bindings")];

function* sources(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(full);
    else if (/\.(js|d\.ts)$/.test(entry.name)) yield full;
  }
}

// Static imports and re-exports, dynamic import(), and JSDoc's import("...") and @import ... from "...".
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["']([^"']+)["']/g;

test("every relative import of the library resolves inside worker/src/ or wasm-bindings/, to a file that exists", () => {
  const outside = [];
  let checked = 0;
  for (const file of sources(library)) {
    for (const [, specifier] of readFileSync(file, "utf8").matchAll(SPECIFIER)) {
      if (!specifier.startsWith(".")) continue;
      checked++;
      const target = path.resolve(path.dirname(file), specifier);
      const where = path.relative(root, file);
      if (!allowed.some((dir) => target.startsWith(dir + path.sep))) outside.push(`${where} imports ${specifier}`);
      else if (!existsSync(target) && !existsSync(target.replace(/\.js$/, ".d.ts"))) outside.push(`${where} imports ${specifier}, which does not exist`);
    }
  }
  assert.ok(checked > 100, `expected the library's many relative imports, found ${checked}`);
  assert.deepEqual(outside, []);
});

test("the check sees an import that leaves the library", () => {
  const sample = `import { x } from "../../gateway/config.js";\n/** @import { Y } from "../gateway/mode.js" */`;
  const found = [...sample.matchAll(SPECIFIER)].map((match) => match[1]);
  assert.deepEqual(found, ["../../gateway/config.js", "../gateway/mode.js"]);
});
