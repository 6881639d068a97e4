// Every link of the package's pages resolves inside the installed package: README.md, CHANGELOG.md and the
// docs shipped with them, read from an unpacked tarball (scripts/test-examples.sh). A page the tarball
// lacks, or a link to a repository file the tarball does not carry (bench/, examples/, test/), would be a
// dead link in node_modules and on the registry's page. Usage: node scripts/check-package-links.js <dir>
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";

const root = process.argv[2];
if (root === undefined) {
  console.error("usage: node scripts/check-package-links.js <unpacked package directory>");
  process.exit(2);
}

const pages = ["README.md", "CHANGELOG.md", ...(existsSync(join(root, "docs")) ? readdirSync(join(root, "docs")).map((name) => `docs/${name}`) : [])]
  .filter((page) => page.endsWith(".md") && existsSync(join(root, page)));

const problems = [];
for (const page of pages) {
  // Code spans and fences hold examples, not links.
  const text = readFileSync(join(root, page), "utf8").replace(/^```[\s\S]*?^```$/gm, "").replace(/`[^`\n]*`/g, "");
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^(https?:|mailto:|#)/.test(target)) continue;
    const path = join(dirname(join(root, page)), decodeURIComponent(target.split("#")[0]));
    if (!existsSync(path)) problems.push(`${page}: ${target} (${relative(root, path)} is not in the package)`);
  }
}
if (problems.length > 0) {
  console.error(`package links: ${problems.length} link(s) do not resolve inside the package:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log(`package links: every link of ${pages.length} pages resolves inside the package`);
