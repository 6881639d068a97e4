// The planet figure in the docs is the bench's, not typed by hand: README's planet rows and
// docs/stores.md's planet section are exactly what bench/planet-figure.json renders to
// (bench/lib/planet-figure-render.js; `node bench/planet-figure.js --render` rewrites them).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { PLANET_PAGES, readmeSection, renderPages, storesSection, withSection } from "../../bench/lib/planet-figure-render.js";

const root = new URL("../../", import.meta.url);
const read = (path) => readFileSync(new URL(path, root), "utf8");
const figure = JSON.parse(read("bench/planet-figure.json"));

test("README's planet rows and docs/stores.md's planet section match bench/planet-figure.json", () => {
  const rendered = renderPages(figure, read);
  for (const page of PLANET_PAGES) assert.equal(read(page), rendered[page], `${page} differs from what bench/planet-figure.json renders: run node bench/planet-figure.js --render`);
});

test("the figure covers every exact store in every region, from a full run", () => {
  assert.equal(figure.quick, false, "a quick run's figure is not for the docs");
  assert.deepEqual(figure.stores.map((s) => s.store), ["durable", "durable + lease", "regional", "redis", "redis + lease"]);
  for (const s of figure.stores) assert.deepEqual(s.regions.map((r) => r.rttMs), [2, 40, 90, 160, 250], s.store);
});

test("a changed figure changes the pages: the check would catch a stale page", () => {
  const changed = structuredClone(figure);
  changed.stores[0].overAdmitted += 1;
  changed.stores[0].regions[4].p99Ms += 1;
  assert.notEqual(readmeSection(changed), readmeSection(figure));
  assert.notEqual(storesSection(changed), storesSection(figure));
  assert.throws(() => withSection("no markers here", "x", "page.md"), /lacks the markers/);
});
