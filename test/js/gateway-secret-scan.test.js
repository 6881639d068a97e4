// Issue 23: the gateway's masking finds where to look with the wasm core's scan
// (cpp/include/sluice/secret_scan.hpp) and runs the exact matcher there only. The scan may only add
// positions to try, never drop one: on random texts full of secrets, fragments of them in every
// spelling, escape soup and raw bytes, cut into random chunks, the wasm scan must mask exactly the
// bytes the JavaScript scan (every position tried) masks. The sparse scan reads a gram every few bytes
// and the bytes 16 at a time: fragments of the shortest length are planted at every offset against
// those strides, as they are and with their first escape as late as it can be, and must be masked.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { random } from "../../bench/worker/workload.js"; // the bench's seeded PRNG (mulberry32)
import { secretMasker } from "../../worker/gateway/redact.js";
import { leakSpellings } from "./fixtures/gateway/harness.js";

const encoder = new TextEncoder();
// Secrets whose characters every encoding changes, one as long as the bench's, one short enough to
// have no fragments (12 bytes or fewer: masked whole only), one with non-ASCII characters.
const SECRETS = [
  "tok/en+9f=3a&b<c>d\"e'f~g h%i;j:k@l?m#n7c1e5",
  "Adm1n/Secret+Key==x_y-z.0123456789",
  "sh0rt+k/y&1",
  "bench-upstream-secret-7f3a9c1e5b2d4f60a8e1c3b5",
  "ключ-secret-ü-0123456789abcdef",
];

// A random piece of text: filler, a secret or a fragment of one in some spelling, escape soup, or raw bytes.
function piece(next) {
  const pick = (list) => list[Math.floor(next() * list.length)];
  const roll = next();
  if (roll < 0.3) {
    const secret = pick(SECRETS);
    const from = Math.floor(next() * secret.length);
    const to = Math.min(secret.length, from + 8 + Math.floor(next() * secret.length));
    return encoder.encode(pick(leakSpellings(next() < 0.5 ? secret : secret.slice(from, to))));
  }
  if (roll < 0.5) {
    const soup = "%&\\+#;xu0123456789abcdefABCDEF/\"=";
    return encoder.encode(Array.from({ length: 1 + Math.floor(next() * 40) }, () => pick([...soup])).join(""));
  }
  if (roll < 0.6) return Uint8Array.from({ length: 1 + Math.floor(next() * 30) }, () => Math.floor(next() * 256));
  return encoder.encode(Array.from({ length: 1 + Math.floor(next() * 80) }, () => String.fromCharCode(0x20 + Math.floor(next() * 95))).join(""));
}

function randomText(next, pieces) {
  const parts = Array.from({ length: pieces }, () => piece(next));
  const bytes = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}

// `bytes` through a stream masker, in chunks cut at random.
function maskedInChunks(masker, bytes, next, largest) {
  const stream = masker.stream();
  const out = [];
  for (let at = 0; at < bytes.length; ) {
    const size = 1 + Math.floor(next() * largest);
    const released = stream.push(bytes.slice(at, at + size));
    if (released !== null) out.push(...released);
    at += size;
  }
  const rest = stream.end();
  if (rest !== null) out.push(...rest);
  return Uint8Array.from(out);
}

describe("the wasm scan finds every position the JavaScript scan does", () => {
  const js = secretMasker(SECRETS, { scan: "js" });
  const wasm = secretMasker(SECRETS, { scan: "wasm" });

  test("whole texts: the same bytes masked, and something masked in most", () => {
    const next = random(0x5ca1);
    let masking = 0;
    for (let trial = 0; trial < 300; trial++) {
      const text = randomText(next, 1 + Math.floor(next() * 30));
      const byJs = text.slice();
      const byWasm = text.slice();
      const changedJs = js.bytes(byJs);
      assert.equal(wasm.bytes(byWasm), changedJs, `trial ${trial}`);
      assert.deepEqual(byWasm, byJs, `trial ${trial}`);
      if (changedJs) masking++;
    }
    // The texts do carry secrets: a comparison of texts with nothing to mask would prove nothing.
    assert.ok(masking > 200, `${masking} of 300 texts had something masked`);
  });

  test("random chunkings: each scan's stream masks the same bytes", () => {
    const next = random(0xc4a1);
    for (let trial = 0; trial < 150; trial++) {
      const text = randomText(next, 5 + Math.floor(next() * 40));
      const largest = [4, 64, 700, 5000][trial % 4];
      const seed = Math.floor(next() * 2 ** 31);
      const byJs = maskedInChunks(js, text, random(seed), largest);
      const byWasm = maskedInChunks(wasm, text, random(seed), largest);
      assert.equal(byWasm.length, text.length);
      assert.deepEqual(byWasm, byJs, `trial ${trial}, chunks up to ${largest} bytes`);
    }
  });

  test("the default scan (wasm from 256 bytes) masks what the JavaScript scan masks", () => {
    const auto = secretMasker(SECRETS);
    const next = random(0xa070);
    for (let trial = 0; trial < 50; trial++) {
      const text = randomText(next, 20 + Math.floor(next() * 40));
      const byJs = text.slice();
      const byAuto = text.slice();
      js.bytes(byJs);
      auto.bytes(byAuto);
      assert.deepEqual(byAuto, byJs, `trial ${trial}`);
    }
  });
});

// Characters in none of the secrets below: filler that can neither begin nor extend an occurrence.
const FILLER = "QVWXYZqvwxyz!()*,;:[]{}|^`";

// HTML's names of some characters of the secrets below (as redact.js reads them).
const NAMED = { "/": "sol", "+": "plus", "=": "equals", "&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos", "%": "percnt", "#": "num", "@": "commat", "?": "quest", ":": "colon", ";": "semi" };

// `fragment` (a string) with its characters spelled as `how` says: "raw", or its first `escapeAt`
// characters as they are and the next one escaped in one of the masker's forms, the rest as they are.
function spellFragment(fragment, escapeAt, form) {
  const hex = (c) => c.charCodeAt(0).toString(16).padStart(2, "0");
  const forms = [(c) => `%${hex(c).toUpperCase()}`, (c) => `%${hex(c)}`, (c) => `\\u00${hex(c)}`, (c) => `\\x${hex(c)}`, (c) => `&#${c.charCodeAt(0)};`, (c) => `&#x${hex(c)};`, (c) => (c === " " ? "+" : c === "/" || c === '"' || c === "\\" ? `\\${c}` : `%${hex(c)}`), (c) => (NAMED[c] === undefined ? `%${hex(c)}` : `&${NAMED[c]};`)];
  if (escapeAt < 0) return fragment;
  return fragment.slice(0, escapeAt) + forms[form % forms.length](fragment[escapeAt]) + fragment.slice(escapeAt + 1);
}

describe("the sparse scan misses no fragment of the shortest length, wherever it lies", () => {
  // Every secret long enough for the sparse scan (7 bytes and more: a gram every 9 bytes with these,
  // whose shortest occurrence is 12 bytes), with the characters whose escapes the block test singles
  // out (`/`, `"`, `\\`, a space).
  const secrets = ['tok/en+9f=3a&b<c>d"e\'f~g h%i;j:k@l?m#n7c1e5\\Z', "bench-upstream-secret-7f3a9c1e5b2d4f60a8e1c3b5"];
  const js = secretMasker(secrets, { scan: "js" });
  const wasm = secretMasker(secrets, { scan: "wasm" });

  test("12 bytes of a secret at every offset (0 to 47: every phase of the 9-byte gram stride and of the 16-byte blocks), as they are or with their first escape anywhere, are masked", () => {
    const next = random(0x5ca2);
    let planted = 0;
    for (const secret of secrets) {
      for (let from = 0; from + 12 <= secret.length; from += 5) {
        const fragment = secret.slice(from, from + 12);
        for (let offset = 0; offset < 48; offset++) {
          for (let escapeAt = -1; escapeAt < 12; escapeAt++) {
            const spelled = spellFragment(fragment, escapeAt, Math.floor(next() * 8));
            const tail = 1 + Math.floor(next() * 40);
            const text = encoder.encode(
              Array.from({ length: offset }, () => FILLER[Math.floor(next() * FILLER.length)]).join("") +
                spelled +
                Array.from({ length: tail }, () => FILLER[Math.floor(next() * FILLER.length)]).join(""),
            );
            const byJs = text.slice();
            const byWasm = text.slice();
            js.bytes(byJs);
            wasm.bytes(byWasm);
            assert.deepEqual(byWasm, byJs, `${JSON.stringify(spelled)} at ${offset}`);
            const span = byWasm.subarray(offset, offset + encoder.encode(spelled).length);
            assert.ok(span.every((b) => b === 0x2a), `${JSON.stringify(spelled)} at ${offset} is masked`);
            planted++;
          }
        }
      }
    }
    assert.ok(planted > 5000, `${planted} fragments planted`);
  });

  test("split at every byte of the fragment, the stream masks what the JavaScript scan masks", () => {
    const next = random(0x5ca3);
    for (let trial = 0; trial < 200; trial++) {
      const secret = secrets[trial % 2];
      const from = Math.floor(next() * (secret.length - 12));
      const spelled = spellFragment(secret.slice(from, from + 12 + Math.floor(next() * 6)), Math.floor(next() * 13) - 1, Math.floor(next() * 8));
      const before = Array.from({ length: Math.floor(next() * 300) }, () => String.fromCharCode(0x20 + Math.floor(next() * 95))).join("");
      const text = encoder.encode(`${before}${spelled}${FILLER}`);
      const start = encoder.encode(before).length;
      const inTwo = (masker, cut) => {
        const stream = masker.stream();
        const out = [];
        for (const part of [text.slice(0, cut), text.slice(cut)]) {
          const released = stream.push(part);
          if (released !== null) out.push(...released);
        }
        const rest = stream.end();
        if (rest !== null) out.push(...rest);
        return Uint8Array.from(out);
      };
      for (let cut = start; cut <= start + spelled.length; cut++) {
        const byWasm = inTwo(wasm, cut);
        assert.deepEqual(byWasm, inTwo(js, cut), `trial ${trial}, cut at ${cut}`);
        // Masked from its first byte on, whatever the cut (the bytes held back are masked with the rest).
        assert.ok(byWasm.subarray(start, start + 12).every((b) => b === 0x2a), `trial ${trial}, cut at ${cut}`);
      }
    }
  });

  test("a secret too short for the sparse scan (6 bytes): the dense scan masks what the JavaScript scan masks", () => {
    const short = ["k/y&1x", ...SECRETS];
    const denseJs = secretMasker(short, { scan: "js" });
    const denseWasm = secretMasker(short, { scan: "wasm" });
    const next = random(0xd05e);
    for (let trial = 0; trial < 100; trial++) {
      const text = randomText(next, 1 + Math.floor(next() * 30));
      const byJs = text.slice();
      const byWasm = text.slice();
      denseJs.bytes(byJs);
      denseWasm.bytes(byWasm);
      assert.deepEqual(byWasm, byJs, `trial ${trial}`);
    }
  });
});
