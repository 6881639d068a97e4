// Masks the gateway's secrets wherever an upstream echoes one back (a debug endpoint that reflects
// request headers, an error page quoting the Authorization header). Without this, any client could
// read a credential through such an endpoint. EVERY configured secret is masked on EVERY route: a
// public route on the same upstream may echo the credential another route sends. Each occurrence
// becomes as many `*` bytes as it has, so lengths — and a Content-Length — stay valid.
//
// Caught, each character of the secret spelled in any of these ways, mixed freely (an encoder may
// escape some characters and not others; Python's quote() leaves `/`, Go's JSON escapes `+` as
// \u002b):
//   - as it is;
//   - percent-encoded, hex in either case (%2F, %2f), and `+` for a space (form encoding);
//   - JSON/JavaScript escapes: \uXXXX (either case), \xXX, and \/ \" \\;
//   - HTML character references: &#47; &#x2F; (either case, up to 6 digits) and the named ones for
//     ASCII punctuation (&sol; &plus; &equals; &amp; ...);
// and, when the secret is long enough to give at least 8 base64 characters of its own, its base64 and
// base64url spellings at each of the 3 alignments it can have inside a longer encoded text (the 1 or 2
// characters at each end that mix in neighbouring bytes stay visible).
// Fragments: any run of at least FRAGMENT_BYTES (12) consecutive bytes of a secret is masked too, in
// each of those spellings (an upstream that echoes a secret cut short, say its first 20 characters,
// leaks no 12 of them in a row). Why 12: longer than the public prefixes keys share with every other
// key of their kind (`sk_live_`, `ghp_`, `xoxb-`, `AKIA`: 4 to 8 characters), so text quoting a prefix
// is left alone, and long enough that a run of a random token's characters (72 bits of base64, 48 of
// hex) does not turn up in a response by chance; what stays visible is at most 11 characters of a
// secret in a row. A secret of 12 bytes or fewer is masked whole only, as before.
// Not caught (docs/security.md says so): base64 broken by line breaks, any other encoding (hex dumps,
// gzip, encryption), a secret split by other text, and escapes other than those above for non-ASCII
// characters of a secret (those are matched as they are or percent-encoded only).

import sluiceWasm from "#sluice-wasm";
import { SecretScan } from "../../wasm-bindings/secret-scan.js";

const STAR = 0x2a;
// Texts from this length on are first scanned by the wasm core for the positions where an occurrence
// may begin (cpp/include/sluice/secret_scan.hpp), and the matcher below runs at those only; shorter
// ones (header values) are tried at every position, which costs less than the copy in and out.
const WASM_SCAN_BYTES = 256;
/** @type {SecretScan | null} One per isolate, made on first use. */
let wasmScan = null;
const sharedScan = () => (wasmScan ??= new SecretScan(/** @type {WebAssembly.Module} */ (sluiceWasm)));
// How many header values that masked nothing a masker remembers, and the longest (text() below).
const CLEAN_VALUES = 256;
const CLEAN_VALUE_CHARS = 128;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Named HTML character references of ASCII characters (HTML's list, those an encoder emits).
const NAMED_REFERENCES = new Map(
  Object.entries({
    amp: 0x26, lt: 0x3c, gt: 0x3e, quot: 0x22, apos: 0x27, sol: 0x2f, bsol: 0x5c, plus: 0x2b,
    equals: 0x3d, num: 0x23, percnt: 0x25, excl: 0x21, dollar: 0x24, lpar: 0x28, rpar: 0x29,
    ast: 0x2a, comma: 0x2c, period: 0x2e, colon: 0x3a, semi: 0x3b, quest: 0x3f, commat: 0x40,
    lsqb: 0x5b, rsqb: 0x5d, lowbar: 0x5f, grave: 0x60, lcub: 0x7b, rcub: 0x7d, verbar: 0x7c,
    Hat: 0x5e, nbsp: 0xa0,
  }),
);
// The longest spelling of one character above: "&#x00002F;" (10 bytes).
const LONGEST_SPELLING = 10;
const MIN_BASE64_NEEDLE = 8;
/** The shortest run of a secret's bytes masked on its own (see the top of this file for why 12). */
export const FRAGMENT_BYTES = 12;
// A base64 needle's characters that FRAGMENT_BYTES bytes always cover, whatever their alignment.
const FRAGMENT_BASE64 = Math.floor((8 * FRAGMENT_BYTES) / 6) - 2;
const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** @param {number} c @returns {number} */
function hexValue(c) {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x57;
  return -1;
}

// The hex number of `count` digits at bytes[at], or -1.
/** @param {Uint8Array} bytes @param {number} at @param {number} count @returns {number} */
function hexAt(bytes, at, count) {
  if (at + count > bytes.length) return -1;
  let value = 0;
  for (let i = 0; i < count; i++) {
    const digit = hexValue(bytes[at + i]);
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// An escape's decoded value and length packed in one number (value * 16 + length, every length below
// 16), so the scan allocates nothing per byte; -1 is "no escape here".
const NONE = -1;
const packed = (/** @type {number} */ value, /** @type {number} */ length) => value * 16 + length;

// An HTML character reference at bytes[at] ("&..."), packed, or NONE.
/** @param {Uint8Array} bytes @param {number} at @returns {number} */
function characterReference(bytes, at) {
  if (bytes[at + 1] === 0x23) {
    // &#DDD; or &#xHHH;
    const hex = (bytes[at + 2] | 0x20) === 0x78;
    let i = at + (hex ? 3 : 2);
    let value = 0;
    let digits = 0;
    for (; i < bytes.length && digits <= 6; i++, digits++) {
      const digit = hex ? hexValue(bytes[i]) : bytes[i] >= 0x30 && bytes[i] <= 0x39 ? bytes[i] - 0x30 : -1;
      if (digit < 0) break;
      value = value * (hex ? 16 : 10) + digit;
    }
    if (digits === 0 || digits > 6 || bytes[i] !== 0x3b) return NONE;
    return packed(value, i + 1 - at);
  }
  let i = at + 1;
  for (; i < bytes.length && i - at <= 8; i++) {
    const c = bytes[i];
    if (c === 0x3b) break;
    if (!((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a)) return NONE;
  }
  if (bytes[i] !== 0x3b || i === at + 1) return NONE;
  // The name, at most 8 ASCII letters: built here, where a TextDecoder call costs a microsecond.
  let name = "";
  for (let j = at + 1; j < i; j++) name += String.fromCharCode(bytes[j]);
  const value = NAMED_REFERENCES.get(name);
  return value === undefined ? NONE : packed(value, i + 1 - at);
}

// One encoded character at bytes[at], packed, or NONE when bytes[at] starts no escape.
/** @param {Uint8Array} bytes @param {number} at @returns {number} */
function escapedCharacter(bytes, at) {
  const c = bytes[at];
  if (c === 0x25) {
    const value = hexAt(bytes, at + 1, 2);
    return value < 0 ? NONE : packed(value, 3);
  }
  if (c === 0x2b) return packed(0x20, 1);
  if (c === 0x5c) {
    const next = bytes[at + 1];
    if (next === 0x75) {
      const value = hexAt(bytes, at + 2, 4);
      return value < 0 ? NONE : packed(value, 6);
    }
    if (next === 0x78) {
      const value = hexAt(bytes, at + 2, 2);
      return value < 0 ? NONE : packed(value, 4);
    }
    if (next === 0x2f || next === 0x22 || next === 0x5c) return packed(next, 2);
    return NONE;
  }
  if (c === 0x26) return characterReference(bytes, at);
  return NONE;
}

// Whether bytes[at] can begin an escape (escapedCharacter's first bytes).
const isEscapeStart = (/** @type {number} */ c) => c === 0x25 || c === 0x2b || c === 0x5c || c === 0x26;

/**
 * Where an occurrence of `secret` (its UTF-8 bytes) from its byte `index` on, spelled in any mix of the
 * forms above, that starts at bytes[at] ends (exclusive), or -1. It may stop short of the secret's end
 * once `minimum` of its bytes (counted from `from`) matched: a fragment; the default asks for the
 * whole secret. Non-ASCII bytes of the secret match as they are or as %XX.
 * @param {Uint8Array} bytes
 * @param {number} at
 * @param {Uint8Array} secret
 * @param {number} index
 * @param {number} minimum
 * @param {number} from
 * @returns {number}
 */
function occurrenceEnd(bytes, at, secret, index = 0, minimum = secret.length - index, from = index) {
  let p = at;
  for (let i = index; i < secret.length; i++) {
    if (p >= bytes.length) return i - from >= minimum ? p : -1;
    const want = secret[i];
    const here = bytes[p];
    // Most bytes start no escape: one comparison decides.
    if (!isEscapeStart(here)) {
      if (here !== want) return i - from >= minimum ? p : -1;
      p += 1;
      continue;
    }
    const escaped = escapedCharacter(bytes, p);
    if (escaped !== NONE && escaped >>> 4 === want && (want < 0x80 || here === 0x25)) {
      // The escape and the raw reading can both fit (a secret holding `%`, `+`, `&` or `\`): try
      // the escape, and the raw byte if the rest does not follow.
      if (here !== want) {
        p += escaped & 15;
        continue;
      }
      const end = occurrenceEnd(bytes, p + (escaped & 15), secret, i + 1, minimum, from);
      if (end >= 0) return end;
    }
    if (here !== want) return i - from >= minimum ? p : -1;
    p += 1;
  }
  return p;
}

// How far the bytes at bytes[at] match `needle` from its character `from` on (exclusive end), when
// at least `minimum` of them do, else -1.
/** @param {Uint8Array} bytes @param {number} at @param {Uint8Array} needle @param {number} from @param {number} minimum @returns {number} */
function runEnd(bytes, at, needle, from, minimum) {
  let j = from;
  let p = at;
  while (j < needle.length && p < bytes.length && bytes[p] === needle[j]) {
    j++;
    p++;
  }
  return j - from >= minimum ? p : -1;
}

/** @type {Array<{ bytes: Uint8Array, from: number }>} An empty list, shared (never written). */
const NO_ENTRIES = [];
/** @type {{ secrets: Uint8Array[], needles: Uint8Array[] }} No whole-secret candidates (never written). */
const NO_CANDIDATES = { secrets: [], needles: [] };

// Fragment entries ({ bytes, from }: a secret's or needle's bytes from `from` on) indexed by the value
// of their first byte, and again by their first two bytes ((c << 8) | d) for the usual case of two
// raw bytes: most positions of a text begin no entry's first two bytes, and cost one table lookup.
/** @param {Array<{ bytes: Uint8Array, from: number }>} entries */
function fragmentIndex(entries) {
  const byFirst = Array.from({ length: 256 }, () => /** @type {{ bytes: Uint8Array, from: number }[]} */ ([]));
  /** @type {Array<Array<{ bytes: Uint8Array, from: number }>>} */
  const byTwo = new Array(65536).fill(NO_ENTRIES);
  const pairs = new Uint8Array(65536);
  for (const entry of entries) {
    const c = entry.bytes[entry.from];
    byFirst[c].push(entry);
    const id = (c << 8) | entry.bytes[entry.from + 1];
    pairs[id] = 1;
    if (byTwo[id] === NO_ENTRIES) byTwo[id] = [];
    byTwo[id].push(entry);
  }
  return { byFirst, byTwo, pairs, entries };
}


// Every run of a secret of `minimum` bytes or more begins at some byte `from` of it: one entry each.
/** @param {readonly Uint8Array[]} list @param {number} minimum @returns {Array<{ bytes: Uint8Array, from: number }>} */
function fragmentsOf(list, minimum) {
  const entries = [];
  for (const bytes of list) {
    if (bytes.length <= minimum) continue;
    for (let from = 0; from + minimum <= bytes.length; from++) entries.push({ bytes, from });
  }
  return entries;
}

// The base64 (or base64url) text that `secret` contributes at each of the 3 byte alignments, minus
// the characters that mix in neighbouring bytes.
/** @param {Uint8Array} secret @returns {Uint8Array[]} */
function base64Needles(secret) {
  const needles = [];
  for (let shift = 0; shift < 3; shift++) {
    const bytes = new Uint8Array(shift + secret.length);
    bytes.set(secret, shift);
    let binary = "";
    for (const byte of bytes) binary += String.fromCharCode(byte);
    const encoded = btoa(binary);
    const first = Math.ceil((8 * shift) / 6);
    const end = Math.floor((8 * bytes.length) / 6);
    const needle = encoded.slice(first, end);
    if (needle.length < MIN_BASE64_NEEDLE) continue;
    needles.push(needle, needle.replaceAll("+", "-").replaceAll("/", "_"));
  }
  return [...new Set(needles)].map((needle) => encoder.encode(needle));
}

/** @param {Uint8Array} bytes @param {number} at @param {Uint8Array} needle @returns {boolean} */
function startsAt(bytes, at, needle) {
  if (at + needle.length > bytes.length) return false;
  for (let j = 0; j < needle.length; j++) if (bytes[at + j] !== needle[j]) return false;
  return true;
}

/**
 * A masker of several secrets: `mask(bytes)` masks, in place, every occurrence that lies wholly
 * inside `bytes`; `longest` bounds an occurrence's length.
 *
 * The scan is one table lookup per byte: `candidates[b]` lists what may begin at a byte b (the secrets
 * whose first byte is b, every secret at a byte that begins an escape, the base64 needles starting
 * with b), so a byte that begins nothing costs one load and one comparison, and a byte that begins
 * something is tried against those candidates only.
 * @param {readonly string[]} secrets
 * @param {"auto" | "wasm" | "js"} [scan] where positions are found (secretMasker's options.scan)
 * @returns {{ mask: (bytes: Uint8Array) => boolean, longest: number }}
 */
function compile(secrets, scan = "auto") {
  const spelled = secrets.map((secret) => encoder.encode(secret));
  const needles = spelled.flatMap(base64Needles);
  const longest = Math.max(...spelled.map((bytes) => bytes.length * LONGEST_SPELLING), ...needles.map((needle) => needle.length));
  /** @type {{ secrets: Uint8Array[], needles: Uint8Array[] }[]} */
  const candidates = Array.from({ length: 256 }, () => ({ secrets: [], needles: [] }));
  for (const bytes of spelled) {
    candidates[bytes[0]].secrets.push(bytes);
    // A secret's first character may be spelled as an escape (`+` only ever spells a space).
    for (const c of [0x25, 0x5c, 0x26]) if (!candidates[c].secrets.includes(bytes)) candidates[c].secrets.push(bytes);
    if (bytes[0] === 0x20 && !candidates[0x2b].secrets.includes(bytes)) candidates[0x2b].secrets.push(bytes);
  }
  for (const needle of needles) candidates[needle[0]].needles.push(needle);
  // Fragments (FRAGMENT_BYTES of a secret, FRAGMENT_BASE64 of a needle, or more, in a row).
  const fragments = fragmentIndex(fragmentsOf(spelled, FRAGMENT_BYTES));
  const needleFragments = fragmentIndex(fragmentsOf(needles, FRAGMENT_BASE64));
  const starts = new Uint8Array(256);
  for (let c = 0; c < 256; c++) starts[c] = candidates[c].secrets.length + candidates[c].needles.length > 0 ? 1 : 0;
  // The fragments' filter, by a position's first two bytes: those of some fragment as they are, or a
  // second byte that may begin an escape (a byte that may begin one is tried whatever follows). A
  // position whose two bytes are none of them begins no fragment: one lookup decides.
  const fragmentPairs = new Uint8Array(65536);
  // And by the third byte (a bit of 32 bits per pair, from the third byte's low 5 bits): most pairs
  // that begin a fragment somewhere are followed by a byte that continues none.
  const fragmentThirds = new Uint32Array(65536);
  for (const { bytes, from } of [...fragments.entries, ...needleFragments.entries]) {
    const pair = (bytes[from] << 8) | bytes[from + 1];
    fragmentPairs[pair] = 1;
    fragmentThirds[pair] |= 1 << (bytes[from + 2] & 31);
  }
  for (const d of [0x25, 0x2b, 0x5c, 0x26]) {
    for (let c = 0; c < 256; c++) {
      fragmentPairs[(c << 8) | d] = 1;
      fragmentThirds[(c << 8) | d] = 0xffffffff;
    }
  }
  // The pairs as a bit set (8 KiB: it stays in the fastest cache, and is read at every byte).
  const pairBits = new Uint32Array(2048);
  for (let pair = 0; pair < 65536; pair++) if (fragmentPairs[pair] === 1) pairBits[pair >>> 5] |= 1 << (pair & 31);
  // A third byte that may begin an escape: every pair that begins a fragment stays a candidate.
  for (let pair = 0; pair < 65536; pair++) if (fragmentPairs[pair] === 1) for (const d of [0x25, 0x2b, 0x5c, 0x26]) fragmentThirds[pair] |= 1 << (d & 31);
  const hasFragments = fragments.entries.length + needleFragments.entries.length > 0;
  // The wasm scan's tables (secret_scan.hpp): positions where `mask` below could find something are a
  // subset of its candidates. A whole secret or needle long enough to have fragments begins with its
  // own first fragment, so only the shorter ones need `rawStart`; an escape matters when the
  // character it spells begins a secret (every secret is tried at an escape) or a fragment
  // (`escapeValueStart`); and a fragment's first three bytes are as they are (`pairIndex`, then the
  // pair's `thirdSets`), or the first two then an escape, or the first then an escape.
  const scanInput = () => {
    const rawStart = new Uint8Array(256);
    for (const bytes of spelled) if (bytes.length <= FRAGMENT_BYTES) rawStart[bytes[0]] = 1;
    for (const needle of needles) if (needle.length <= FRAGMENT_BASE64) rawStart[needle[0]] = 1;
    const fragmentFirst = new Uint8Array(256);
    const escapeValueStart = new Uint8Array(256);
    for (const bytes of spelled) escapeValueStart[bytes[0]] = 1;
    const pairIndex = new Uint16Array(65536);
    /** @type {number[]} */
    const thirdSets = [];
    for (const { bytes, from } of [...fragments.entries, ...needleFragments.entries]) {
      fragmentFirst[bytes[from]] = 1;
      escapeValueStart[bytes[from]] = 1;
      const pair = (bytes[from] << 8) | bytes[from + 1];
      if (pairIndex[pair] === 0) {
        thirdSets.push(0, 0, 0, 0, 0, 0, 0, 0);
        pairIndex[pair] = thirdSets.length / 8;
      }
      const third = bytes[from + 2];
      thirdSets[(pairIndex[pair] - 1) * 8 + (third >>> 5)] |= 1 << (third & 31);
    }
    // Every occurrence repeats FRAGMENT_BYTES of a secret, or a whole secret, as it is, or holds an
    // escape; every occurrence of a needle repeats FRAGMENT_BASE64 of it, or the whole needle, as it is.
    const runs = [
      ...spelled.map((bytes) => ({ bytes, minBytes: Math.min(bytes.length, FRAGMENT_BYTES), escapable: true })),
      ...needles.map((bytes) => ({ bytes, minBytes: Math.min(bytes.length, FRAGMENT_BASE64), escapable: false })),
    ];
    // The named references the matcher reads as a character of a secret, by their first letter.
    const namedFirst = new Uint32Array(8);
    for (const [name, value] of NAMED_REFERENCES) {
      if (spelled.some((bytes) => bytes.includes(value))) namedFirst[name.charCodeAt(0) >>> 5] |= 1 << (name.charCodeAt(0) & 31);
    }
    return { rawStart, fragmentFirst, escapeValueStart, hasFragments, pairIndex, thirdSets: Uint32Array.from(thirdSets, (word) => word >>> 0), runs, namedFirst };
  };
  /** @type {{ address: number } | null} */
  let scanTables = null;

  // The end of the longest fragment of a secret that begins at bytes[at], or `end` when none is longer.
  /** @param {Uint8Array} bytes @param {number} at @param {number} end @returns {number} */
  function fragmentEnd(bytes, at, end) {
    const c = bytes[at];
    const next = at + 1 < bytes.length ? bytes[at + 1] : -1;
    const list = next !== -1 && !isEscapeStart(next) ? fragments.byTwo[(c << 8) | next] : fragments.byFirst[c];
    for (let k = 0; k < list.length; k++) {
      const e = occurrenceEnd(bytes, at, list[k].bytes, list[k].from, FRAGMENT_BYTES, list[k].from);
      if (e > end) end = e;
    }
    if (isEscapeStart(c)) {
      // An escape spells the character it stands for: the fragments that begin with that one.
      const escaped = escapedCharacter(bytes, at);
      const value = escaped === NONE ? -1 : escaped >>> 4;
      if (value >= 0 && value < 256 && value !== c) {
        const escapedList = fragments.byFirst[value];
        for (let k = 0; k < escapedList.length; k++) {
          const e = occurrenceEnd(bytes, at, escapedList[k].bytes, escapedList[k].from, FRAGMENT_BYTES, escapedList[k].from);
          if (e > end) end = e;
        }
      }
    }
    if (next !== -1) {
      const needleList = needleFragments.byTwo[(c << 8) | next];
      for (let k = 0; k < needleList.length; k++) {
        const e = runEnd(bytes, at, needleList[k].bytes, needleList[k].from, FRAGMENT_BASE64);
        if (e > end) end = e;
      }
    }
    return end;
  }

  // The end of the longest occurrence that begins at bytes[at], or -1.
  /** @param {Uint8Array} bytes @param {number} at @returns {number} */
  function occurrenceAt(bytes, at) {
    const length = bytes.length;
    const c = bytes[at];
    // A fragment may begin here: its first two bytes as they are, or an escape among them.
    const pair = at + 1 < length ? (c << 8) | bytes[at + 1] : 0;
    const fragment =
      hasFragments &&
      at + 1 < length &&
      ((((pairBits[pair >>> 5] >>> (pair & 31)) & 1) === 1 && (at + 2 >= length || (fragmentThirds[pair] & (1 << (bytes[at + 2] & 31))) !== 0)) || isEscapeStart(c));
    if (starts[c] === 0 && !fragment) return -1;
    const { secrets: trySecrets, needles: tryNeedles } = candidates[c];
    let end = -1;
    for (let k = 0; k < trySecrets.length; k++) {
      const e = occurrenceEnd(bytes, at, trySecrets[k]);
      if (e > end) end = e;
    }
    for (let k = 0; k < tryNeedles.length; k++) {
      if (startsAt(bytes, at, tryNeedles[k]) && at + tryNeedles[k].length > end) end = at + tryNeedles[k].length;
    }
    return fragment ? fragmentEnd(bytes, at, end) : end;
  }

  // Tries every position: the JavaScript scan.
  /** @param {Uint8Array} bytes @returns {boolean} */
  function maskEveryPosition(bytes) {
    let changed = false;
    for (let at = 0; at < bytes.length; at++) {
      const end = occurrenceAt(bytes, at);
      if (end > at) {
        bytes.fill(STAR, at, end);
        changed = true;
        at = end - 1;
      }
    }
    return changed;
  }

  // Tries the wasm scan's candidates only (a superset of the positions where something begins), in
  // order, skipping those inside an occurrence already masked: the same result as maskEveryPosition.
  /** @param {Uint8Array} bytes @returns {boolean} */
  function maskCandidates(bytes) {
    scanTables ??= sharedScan().tables(input);
    const positions = sharedScan().candidates(scanTables, bytes);
    return maskAt(bytes, positions);
  }

  // Masks from `positions` (increasing) on: see maskCandidates.
  /** @param {Uint8Array} bytes @param {Uint32Array} positions @returns {boolean} */
  function maskAt(bytes, positions) {
    let changed = false;
    let next = 0;
    for (let k = 0; k < positions.length; k++) {
      const at = positions[k];
      if (at < next) continue;
      const end = occurrenceAt(bytes, at);
      if (end > at) {
        bytes.fill(STAR, at, end);
        changed = true;
        next = end;
      }
    }
    return changed;
  }

  // Secrets so many that their fragments begin with more than 65,535 distinct pairs do not fit the
  // scan's tables (sluice_scan_tables_new refuses them): those are scanned in JavaScript, as strongly.
  const input = scanInput();
  const fits = input.thirdSets.length / 8 <= 65535;
  const fromBytes = scan === "js" || !fits ? Infinity : scan === "wasm" ? 0 : WASM_SCAN_BYTES;
  const mask = (/** @type {Uint8Array} */ bytes) => (bytes.length >= fromBytes && bytes.length > 0 ? maskCandidates(bytes) : maskEveryPosition(bytes));
  return { mask, longest };
}

/**
 * A masking pass over a stream's chunks, for a stream step of one's own: `push(chunk)` masks what
 * arrived with what was held back and returns the bytes that can be released (or null), `end()` the
 * bytes still held (or null). The last (longest - 1) bytes seen may begin an occurrence that the next
 * chunk completes, so they are held back until it arrives; an occurrence that begins before them is
 * wholly in view.
 * @param {{ mask: (bytes: Uint8Array) => boolean, longest: number }} compiled
 */
function streamMasker({ mask, longest }) {
  /** @type {Uint8Array | null} */
  let held = null;
  return {
    // For a caller that keeps the held-back bytes itself, in front of the next chunk in one buffer
    // (body-watchdog.js's coalescing relay): how many to hold, and the in-place mask of the whole.
    hold: longest - 1,
    mask,
    push(/** @type {ArrayBufferView} */ chunk) {
      const view = chunk instanceof Uint8Array ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      let bytes;
      if (held === null) {
        // The runtime hands each chunk over for good: masked in place, no copy.
        bytes = view;
      } else {
        bytes = new Uint8Array(held.length + view.length);
        bytes.set(held, 0);
        bytes.set(view, held.length);
      }
      mask(bytes);
      const release = Math.max(0, bytes.length - (longest - 1));
      held = release < bytes.length ? bytes.slice(release) : null;
      return release > 0 ? bytes.subarray(0, release) : null;
    },
    end() {
      const rest = held;
      held = null;
      return rest;
    },
  };
}

/** @param {{ mask: (bytes: Uint8Array) => boolean, longest: number }} compiled @returns {TransformStream<ArrayBufferView, Uint8Array>} */
function maskingStream(compiled) {
  const masker = streamMasker(compiled);
  return new TransformStream({
    transform(chunk, controller) {
      const released = masker.push(chunk);
      if (released !== null) controller.enqueue(released);
    },
    flush(controller) {
      const rest = masker.end();
      if (rest !== null) controller.enqueue(rest);
    },
  });
}

/**
 * A masker for `secrets` (strings; empty ones and duplicates are ignored, a single string is one
 * secret, null none): `text(value)` masks a string (a header value, a reason phrase), `bytes(array)`
 * masks a whole body in place (true when it changed something), `stream()` gives a streaming pass
 * ({ push(chunk), end() }, see streamMasker) and `body(stream)` a masked copy of a byte stream. With no
 * secret, `any` is false and every one of them leaves its input as it is.
 * `options.scan` chooses where positions are found: "auto" (the default: the wasm core's scan for texts
 * of 256 bytes or more), "wasm" (always) or "js" (never: every position is tried); all three mask the
 * same bytes (test/js/gateway-secret-scan.test.js).
 * @param {string | null | readonly (string | null | undefined)[]} secrets
 * @param {{ scan?: "auto" | "wasm" | "js" }} [options]
 * @returns {{
 *   any: boolean,
 *   text: (value: string) => string,
 *   bytes: (array: Uint8Array) => boolean,
 *   stream: () => { push(chunk: Uint8Array): Uint8Array | null, end(): Uint8Array | null, hold: number, mask: (bytes: Uint8Array) => boolean },
 *   body: (stream: ReadableStream | null) => ReadableStream | null,
 * }}
 */
export function secretMasker(secrets, options = {}) {
  const list = [...new Set((Array.isArray(secrets) ? secrets : [secrets]).filter((s) => typeof s === "string" && s !== ""))];
  if (list.length === 0) {
    return {
      any: false,
      text: (value) => value,
      bytes: () => false,
      stream: () => ({ push: (chunk) => chunk, end: () => null, hold: 0, mask: () => false }),
      body: (stream) => stream,
    };
  }
  const compiled = compile(list, options.scan ?? "auto");
  // Header values repeat from response to response ("application/json", "no-store", a Date for a
  // second): one that masked nothing is remembered, and its next copy costs a lookup instead of an
  // encode and a scan. Masking depends on the value and this masker's secrets only, so the answer is
  // the same; the set is bounded (short values, emptied when full), whatever an upstream sends.
  /** @type {Set<string>} */
  const clean = new Set();
  return {
    any: true,
    text: (value) => {
      if (clean.has(value)) return value;
      const bytes = encoder.encode(value);
      if (compiled.mask(bytes)) return decoder.decode(bytes);
      if (value.length <= CLEAN_VALUE_CHARS) {
        if (clean.size >= CLEAN_VALUES) clean.clear();
        clean.add(value);
      }
      return value;
    },
    bytes: (array) => compiled.mask(array),
    stream: () => streamMasker(compiled),
    body: (stream) => (stream === null ? null : stream.pipeThrough(maskingStream(compiled))),
  };
}
