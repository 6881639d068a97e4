// Figures a script measured go into a docs page between two markers it owns, so no figure in the docs
// is typed by hand: the script rewrites the section each time it runs.
import { readFileSync, writeFileSync } from "node:fs";

/**
 * writeDocsSection replaces what lies between `<!-- NAME: ... -->` and `<!-- end of NAME -->` in `page`;
 * `script` is the bench script that writes it (bench/SCRIPT.js), NAME's by default.
 */
export function writeDocsSection(page, name, markdown, script = name) {
  const text = readFileSync(page, "utf8");
  const startMarker = `<!-- ${name}: written by bench/${script}.js; do not edit -->`;
  const endMarker = `<!-- end of ${name} -->`;
  const start = text.indexOf(startMarker);
  const end = text.indexOf(endMarker);
  if (start < 0 || end < start) throw new Error(`${page} lacks the markers ${startMarker} ... ${endMarker}`);
  writeFileSync(page, `${text.slice(0, start)}${startMarker}\n\n${markdown.trimEnd()}\n\n${text.slice(end)}`);
}
