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
// Not caught (docs/security.md says so): base64 broken by line breaks, any other encoding (hex dumps,
// gzip, encryption), a secret split by other text, and escapes other than those above for non-ASCII
// characters of a secret (those are matched as they are or percent-encoded only).

const STAR = 0x2a;
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
const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

function hexValue(c) {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x57;
  return -1;
}

// The hex number of `count` digits at bytes[at], or -1.
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

// An HTML character reference at bytes[at] ("&..."): [value, length], or null.
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
    if (digits === 0 || digits > 6 || bytes[i] !== 0x3b) return null;
    return [value, i + 1 - at];
  }
  let i = at + 1;
  let name = "";
  for (; i < bytes.length && i - at <= 8; i++) {
    const c = bytes[i];
    if (c === 0x3b) break;
    if (!((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a)) return null;
    name += String.fromCharCode(c);
  }
  if (bytes[i] !== 0x3b || !NAMED_REFERENCES.has(name)) return null;
  return [NAMED_REFERENCES.get(name), i + 1 - at];
}

// One encoded character at bytes[at]: [value, length], or null when bytes[at] starts no escape.
function escapedCharacter(bytes, at) {
  const c = bytes[at];
  if (c === 0x25) {
    const value = hexAt(bytes, at + 1, 2);
    return value < 0 ? null : [value, 3];
  }
  if (c === 0x2b) return [0x20, 1];
  if (c === 0x5c) {
    const next = bytes[at + 1];
    if (next === 0x75) {
      const value = hexAt(bytes, at + 2, 4);
      return value < 0 ? null : [value, 6];
    }
    if (next === 0x78) {
      const value = hexAt(bytes, at + 2, 2);
      return value < 0 ? null : [value, 4];
    }
    if (next === 0x2f || next === 0x22 || next === 0x5c) return [next, 2];
    return null;
  }
  if (c === 0x26) return characterReference(bytes, at);
  return null;
}

/**
 * Where an occurrence of `secret` (its UTF-8 bytes) spelled in any mix of the forms above that starts
 * at bytes[at] ends (exclusive), or -1. Non-ASCII bytes of the secret match as they are or as %XX.
 */
function occurrenceEnd(bytes, at, secret, index = 0) {
  let p = at;
  for (let i = index; i < secret.length; i++) {
    if (p >= bytes.length) return -1;
    const want = secret[i];
    const escaped = escapedCharacter(bytes, p);
    if (escaped !== null && escaped[0] === want && (want < 0x80 || bytes[p] === 0x25)) {
      // The escape and the raw reading can both fit (a secret holding `%`, `+`, `&` or `\`): try
      // the escape, and the raw byte if the rest does not follow.
      if (bytes[p] !== want) {
        p += escaped[1];
        continue;
      }
      const end = occurrenceEnd(bytes, p + escaped[1], secret, i + 1);
      if (end >= 0) return end;
    }
    if (bytes[p] !== want) return -1;
    p += 1;
  }
  return p;
}

// The base64 (or base64url) text that `secret` contributes at each of the 3 byte alignments, minus
// the characters that mix in neighbouring bytes.
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

function startsAt(bytes, at, needle) {
  if (at + needle.length > bytes.length) return false;
  for (let j = 0; j < needle.length; j++) if (bytes[at + j] !== needle[j]) return false;
  return true;
}

/**
 * A masker of several secrets: `mask(bytes)` masks, in place, every occurrence that lies wholly
 * inside `bytes`; `longest` bounds an occurrence's length.
 */
function compile(secrets) {
  const spelled = secrets.map((secret) => encoder.encode(secret));
  const needles = spelled.flatMap(base64Needles);
  const longest = Math.max(...spelled.map((bytes) => bytes.length * LONGEST_SPELLING), ...needles.map((needle) => needle.length));
  // Bytes that may begin an occurrence: each secret's first byte, an escape's first byte, a needle's.
  const starts = new Uint8Array(256);
  for (const bytes of spelled) starts[bytes[0]] = 1;
  for (const needle of needles) starts[needle[0]] = 1;
  for (const c of [0x25, 0x2b, 0x5c, 0x26]) starts[c] = 1;

  function mask(bytes) {
    let changed = false;
    for (let at = 0; at < bytes.length; at++) {
      if (starts[bytes[at]] === 0) continue;
      let end = -1;
      for (const secret of spelled) {
        end = Math.max(end, occurrenceEnd(bytes, at, secret));
      }
      for (const needle of needles) if (startsAt(bytes, at, needle)) end = Math.max(end, at + needle.length);
      if (end > at) {
        bytes.fill(STAR, at, end);
        changed = true;
        at = end - 1;
      }
    }
    return changed;
  }
  return { mask, longest };
}

function maskingStream({ mask, longest }) {
  // The last (longest - 1) bytes seen may begin an occurrence that the next chunk completes, so they
  // are held back until it arrives. An occurrence that begins before them is wholly in view.
  let held = new Uint8Array(0);
  return new TransformStream({
    transform(chunk, controller) {
      const bytes = new Uint8Array(held.length + chunk.byteLength);
      bytes.set(held, 0);
      bytes.set(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength), held.length);
      mask(bytes);
      const release = Math.max(0, bytes.length - (longest - 1));
      if (release > 0) controller.enqueue(bytes.slice(0, release));
      held = bytes.slice(release);
    },
    flush(controller) {
      if (held.length > 0) controller.enqueue(held);
    },
  });
}

/**
 * A masker for `secrets` (strings; empty ones and duplicates are ignored, a single string is one
 * secret, null none): `text(value)` masks a string (a header value, a reason phrase), `body(stream)` a
 * byte stream. With no secret, both return their input unchanged.
 * @param {string | null | readonly (string | null | undefined)[]} secrets
 * @returns {{ text: (value: string) => string, body: (stream: ReadableStream | null) => ReadableStream | null }}
 */
export function secretMasker(secrets) {
  const list = [...new Set((Array.isArray(secrets) ? secrets : [secrets]).filter((s) => typeof s === "string" && s !== ""))];
  if (list.length === 0) return { text: (value) => value, body: (stream) => stream };
  const compiled = compile(list);
  return {
    text: (value) => {
      const bytes = encoder.encode(value);
      return compiled.mask(bytes) ? decoder.decode(bytes) : value;
    },
    body: (stream) => (stream === null ? null : stream.pipeThrough(maskingStream(compiled))),
  };
}
