// Docs that cannot drift from the code: every option the validator accepts has a row in docs/options.md,
// and every store the `store` option names has a row in docs/stores.md. The option names come from the
// validator itself (the "known:" list of the error it throws for an unknown option), so nothing here is
// a second copy to forget.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

const { rateLimit, SluiceConfigError } = await import("../../worker/src/hono.js");
const { createLimiter } = await import("../../worker/src/sluice.js");
const { STORE_NAMES } = await import("../../worker/src/stores/registry.js");

const doc = (name) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), "utf8");
// The first cells of a markdown table's rows: | `name` | ...
const rowNames = (markdown) => new Set([...markdown.matchAll(/^\| `([^`]+)` \|/gm)].map((match) => match[1]));

// The options the validator knows, as its refusal of an unknown one lists them.
function knownOptions(build) {
  try {
    build();
  } catch (error) {
    assert.ok(error instanceof SluiceConfigError, String(error));
    const known = /\(known: ([^)]*)\)/.exec(error.message);
    assert.ok(known, error.message);
    return known[1].split(", ");
  }
  assert.fail("an unknown option was accepted");
}

test("every option rateLimit, createLimiter and a rule of `rules` accept has a row in docs/options.md", () => {
  const rows = rowNames(doc("options.md"));
  const base = { key: "k", limit: 1, windowSec: 1 };
  const accepted = new Set([
    ...knownOptions(() => rateLimit({ ...base, notAnOption: 1 })),
    ...knownOptions(() => createLimiter({ ...base, notAnOption: 1 })),
    ...knownOptions(() => createLimiter({ key: "k", rules: [{ limit: 1, windowSec: 1, notAnOption: 1 }] })),
  ]);
  assert.ok(accepted.size >= 30, `the validator's list looks short: ${[...accepted]}`);
  assert.deepEqual([...accepted].filter((option) => !rows.has(option)), [], "options missing from docs/options.md");
});

test("every store the `store` option names has a row in docs/stores.md's table", () => {
  const rows = rowNames(doc("stores.md"));
  assert.deepEqual(STORE_NAMES.filter((name) => !rows.has(name)), [], "stores missing from docs/stores.md");
});
