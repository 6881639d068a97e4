// Issue 23, routes: non-ASCII spellings that Unicode folding maps to ASCII (the Kelvin sign in
// `/api/chec%E2%84%AAout`, fullwidth letters, the long s, the dotless i, ligatures) and invisible
// characters are refused (400 sluice_bad_path), never forwarded under a more lenient route. The rule is
// one: refuse (worker/src/http/paths.js says why not fold). Attack on the running gateway first, then
// an exhaustive test over every single-letter confusable of every shipped route, then a seeded property
// test over random mixed spellings.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { random } from "../../bench/worker/workload.js"; // the bench's seeded PRNG (mulberry32)
import { createRouter } from "../../worker/gateway/routes.js";
import { canonicalPath } from "../../worker/src/http/paths.js";
import { startGateway } from "./fixtures/gateway/harness.js";

const RULE = { algorithm: "fixed-window", windowSec: 60, key: "ip" };
const NESTED_CONFIG = {
  routes: [
    { prefix: "/api", methods: ["GET", "POST"], upstream: { url: "https://api.upstream.test/api" }, rules: [{ name: "api", limit: 100, ...RULE }] },
    { prefix: "/api/checkout", methods: ["POST"], upstream: { url: "https://api.upstream.test/api/checkout" }, rules: [{ name: "checkout", limit: 2, ...RULE }] },
  ],
};
const SHIPPED_PREFIXES = JSON.parse(readFileSync(new URL("../../gateway.config.json", import.meta.url), "utf8")).routes.map((route) => route.prefix);

const utf8 = new TextEncoder();
/** `text` with every byte of its UTF-8 percent-encoded. */
const escaped = (text) => [...utf8.encode(text)].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`).join("");

// Every non-ASCII code point that, alone, becomes one ASCII letter or digit under NFKC or a Unicode
// case mapping (before or after NFKC): derived here from the definition, independently of paths.js.
const confusables = new Map();
for (let code = 0x80; code <= 0x10ffff; code++) {
  if (code >= 0xd800 && code <= 0xdfff) continue;
  const char = String.fromCodePoint(code);
  const compatible = char.normalize("NFKC");
  for (const form of [compatible, char.toLowerCase(), char.toUpperCase(), compatible.toLowerCase(), compatible.toUpperCase()]) {
    if (/^[A-Za-z0-9]$/.test(form)) {
      const letter = form.toLowerCase();
      if (!confusables.has(letter)) confusables.set(letter, new Set());
      confusables.get(letter).add(char);
    }
  }
}

describe("attacks on the running gateway", () => {
  let gateway;
  before(async () => {
    gateway = await startGateway({ bundledConfig: NESTED_CONFIG });
  });
  after(() => gateway.dispose());

  test("confusable and invisible spellings of /api/checkout are refused with 400, never reach /api's upstream", async () => {
    const probes = [
      "/api/chec%E2%84%AAout", // K KELVIN SIGN
      "/api/%EF%BD%83%EF%BD%88%EF%BD%85%EF%BD%83%EF%BD%8B%EF%BD%8F%EF%BD%95%EF%BD%94", // fullwidth
      "/api/checkout%EF%BC%8F", // fullwidth solidus after it
      "/api/chec%C4%B8out", // U+0138 kra is not k: allowed below, as a control
      "/%C5%BFapi/checkout", // long s
      "/ap%C4%B1/checkout", // dotless i
      "/api/check%C2%ADout", // soft hyphen
      "/api/check%E2%80%8Bout", // zero width space
      "/api/checkou%F0%9D%90%AD", // MATHEMATICAL BOLD SMALL T
    ];
    const statuses = [];
    for (const path of probes) {
      const response = await gateway.raw(path, { method: "POST", headers: ["CF-Connecting-IP: 203.0.113.20"], body: "{}" });
      statuses.push(response.status);
    }
    assert.deepEqual(statuses, [400, 400, 400, 200, 400, 400, 400, 400, 400]);
    // Only the control (kra, which folds to no ASCII) went through, as it was spelt, under /api.
    assert.deepEqual(gateway.upstream.map((seen) => seen.url), ["/api/chec%C4%B8out"]);
  });
});

describe("every single-letter confusable of every shipped route", () => {
  test("the generator finds the known ones", () => {
    for (const [letter, char] of [["k", "\u212A"], ["s", "\u017F"], ["i", "\u0131"], ["c", "\uFF43"], ["a", "\u{1D41A}"], ["k", "\u24DA"]]) {
      assert.ok(confusables.get(letter)?.has(char), `${letter} U+${char.codePointAt(0).toString(16)}`);
    }
  });

  test("substituted for any letter of any prefix, percent-encoded, is refused", () => {
    let probes = 0;
    for (const prefix of SHIPPED_PREFIXES) {
      for (let i = 0; i < prefix.length; i++) {
        const letter = prefix[i].toLowerCase();
        for (const char of confusables.get(letter) ?? []) {
          const path = `${prefix.slice(0, i)}${escaped(char)}${prefix.slice(i + 1)}`;
          const canonical = canonicalPath(path);
          assert.ok(canonical.problem !== undefined, `${path} (U+${char.codePointAt(0).toString(16)} for ${letter}) was accepted`);
          probes++;
        }
      }
    }
    assert.ok(probes > 1_000, `${probes} probes`);
  });
});

describe("property: a spelling is refused, or picks the route its plain ASCII form picks", () => {
  const match = createRouter(NESTED_CONFIG.routes.concat(SHIPPED_PREFIXES.filter((p) => !p.startsWith("/api")).map((prefix) => ({ prefix }))));
  const next = random(0x23);
  const pick = (list) => list[Math.floor(next() * list.length)];

  test("5,000 random spellings mixing confusables, escapes of ASCII letters and case", () => {
    const prefixes = [...SHIPPED_PREFIXES, "/api/checkout/pay"];
    for (let n = 0; n < 5000; n++) {
      const plain = pick(prefixes);
      let spelt = "";
      let confused = false;
      for (const ch of plain) {
        const options = confusables.get(ch.toLowerCase());
        const roll = next();
        if (options !== undefined && roll < 0.08) {
          spelt += escaped(pick([...options]));
          confused = true;
        } else if (/[a-z]/i.test(ch) && roll < 0.3) {
          spelt += escaped(ch);
        } else if (/[a-z]/i.test(ch) && roll < 0.5) {
          spelt += ch.toUpperCase();
        } else {
          spelt += ch;
        }
      }
      const canonical = canonicalPath(spelt);
      if (confused) {
        assert.ok(canonical.problem !== undefined, `${spelt} (from ${plain}) was accepted as ${canonical.path}`);
      } else {
        assert.equal(canonical.problem, undefined, spelt);
        assert.equal(match(canonical.path)?.route.prefix, match(plain)?.route.prefix, spelt);
      }
    }
  });
});
