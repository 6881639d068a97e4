// Issue 23: the gateway's masking finds where to look with the wasm core's scan
// (cpp/include/sluice/secret_scan.hpp) and runs the exact matcher there only. The scan may only add
// positions to try, never drop one: on random texts full of secrets, fragments of them in every
// spelling, escape soup and raw bytes, cut into random chunks, the wasm scan must mask exactly the
// bytes the JavaScript scan (every position tried) masks.

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
