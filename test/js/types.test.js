// The package's types (generated from the JSDoc of worker/src and wasm-bindings/sluice.js into types/ by
// npm run build:types, which scripts/test.sh runs first) are part of its
// public API: the TypeScript compiler checks them here, as a TypeScript Worker uses them
// (test/types/*.ts, with @ts-expect-error lines for the usage they must refuse), and checks the
// examples of README.md and docs/*.md, as printed, against them. The run-time modules are held to the exports the types declare.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import "./helpers/workers-stub.js";

const rootUrl = new URL("../../", import.meta.url);
const root = fileURLToPath(rootUrl);
const typesDir = new URL("test/types/", rootUrl);
const tsc = fileURLToPath(new URL("node_modules/typescript/bin/tsc", rootUrl));

// Runs the compiler on a project; returns its exit code and everything it printed.
function compile(project) {
  // One checker thread: the machine's other core is for the rest of the suite.
  const args = [tsc, "-p", project, "--pretty", "false", "--singleThreaded"];
  try {
    const output = execFileSync(process.execPath, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    return { status: 0, output };
  } catch (error) {
    if (typeof error.status !== "number") throw error;
    return { status: error.status, output: `${error.stdout}${error.stderr}` };
  }
}

// The declarations under test are generated, never hand-kept: build them from the sources now, so a
// run of this file alone cannot check stale ones (scripts/test.sh builds them too, before every suite).
test("the sources type-check and their declarations generate (npm run build:types)", () => {
  execFileSync(process.execPath, [fileURLToPath(new URL("scripts/build-types.js", rootUrl))], { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
});

test("the generated .d.ts files and the type tests in test/types compile (strict)", () => {
  const { status, output } = compile("test/types");
  assert.equal(status, 0, `tsc -p test/types found errors:\n${output}`);
});

test("the examples of README.md and docs/ compile against the package's types", () => {
  const { status, output } = compile("test/types/tsconfig.readme.json");
  assert.equal(status, 0, `tsc -p test/types/tsconfig.readme.json found errors:\n${output}`);
});

// The pages whose ```js blocks are checked: README.md and every page of docs/.
function documentationPages() {
  const docs = readdirSync(new URL("docs/", rootUrl)).filter((name) => name.endsWith(".md")).sort();
  return ["README.md", ...docs.map((name) => `docs/${name}`)];
}

test("every js block of README.md and docs/*.md is checked: it is one of test/types/readme-*.js, as printed", () => {
  const pages = documentationPages();
  assert.ok(pages.length > 1, "docs/ has no pages: the documentation moved and this test no longer reads it");
  const blocks = pages.flatMap((page) => {
    const text = readFileSync(new URL(page, rootUrl), "utf8");
    return [...text.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((match) => ({ page, block: match[1] }));
  });
  assert.ok(blocks.some(({ page }) => page === "README.md"), "README.md has no js blocks: the pattern no longer matches its fences");
  const copies = new Map(
    readdirSync(typesDir)
      .filter((name) => /^readme-.*\.js$/.test(name))
      .map((name) => [name, readFileSync(new URL(name, typesDir), "utf8")]),
  );
  for (const { page, block } of blocks) {
    const copy = [...copies].find(([, text]) => text === block);
    assert.ok(copy !== undefined, `this example of ${page} has no copy in test/types/readme-*.js (add or update it):\n${block}`);
    copies.delete(copy[0]);
  }
  assert.deepEqual([...copies.keys()], [], "copies of examples that README.md and docs/ no longer have");
});

test("each public module exports at run time exactly the values its generated .d.ts declares", async () => {
  const { PUBLIC_EXPORTS } = await import(new URL("public-exports.js", typesDir).href);
  const packageJson = JSON.parse(readFileSync(new URL("package.json", rootUrl), "utf8"));
  // package.json's code entries ("./hono" -> "sluice/hono"): every one must be listed, so a new
  // entry cannot go unchecked.
  const files = Object.fromEntries(
    Object.entries(packageJson.exports)
      .filter(([, target]) => typeof target === "object")
      .map(([subpath, target]) => [`sluice${subpath.slice(1)}`, target.default]),
  );
  assert.deepEqual(Object.keys(files).filter((name) => !(name in PUBLIC_EXPORTS)), [], "package entries missing from public-exports.js");
  for (const [name, expected] of Object.entries(PUBLIC_EXPORTS)) {
    const file = files[name] ?? `./${name}`;
    const module = await import(new URL(file, rootUrl).href);
    assert.deepEqual(Object.keys(module).sort(), [...expected].sort(), `run-time exports of ${name} (${file})`);
  }
});
