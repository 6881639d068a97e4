// npm run build:types: the package's declarations, generated from the JSDoc of the sources into types/
// (mirroring their paths). TypeScript 7 (tsgo, the pinned devDependency) emits declarations from
// checked JavaScript; it fails the build on any type error in the sources.
//
// One piece is written by hand: worker/src/hono-context.d.ts, the augmentation of Hono's
// ContextVariableMap that types c.get("rateLimit"), which JSDoc cannot spell. tsc does not copy a
// .d.ts to its output, nor keep a reference to one, so it is copied here and imported by the generated
// hono.d.ts: whoever imports sluice/hono gets it.
import { execFileSync } from "node:child_process";
import { copyFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url));
const out = new URL("../types/", import.meta.url);

rmSync(out, { recursive: true, force: true });
try {
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.json", "--pretty", "false"], { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
} catch (error) {
  console.error("build:types: the sources do not type-check (see above)");
  process.exit(typeof error.status === "number" ? error.status : 1);
}

copyFileSync(new URL("../worker/src/hono-context.d.ts", import.meta.url), new URL("worker/src/hono-context.d.ts", out));
const hono = new URL("worker/src/hono.d.ts", out);
const generated = readFileSync(hono, "utf8");
writeFileSync(hono, `${generated.trimEnd()}\n// c.get("rateLimit"): Hono's ContextVariableMap, augmented by hand (see scripts/build-types.js).\nimport "./hono-context.js";\n`);
console.log("build:types: declarations in types/");
