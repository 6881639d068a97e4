// Logpush lines read from their bytes: the answer of parseLogpushLine (logpush.js) without making a
// string of the line or an object of its JSON. One pass checks the whole line against JSON's grammar
// (RFC 8259, as JSON.parse reads it: a line JSON.parse refuses is refused here) and notes where the
// values of the fields a record needs lie; only those become strings (the rest of the line, a user
// agent and the fields nobody replays, makes no garbage), and a client's request headers, the same
// text line after line, give the same frozen object (keptHeaders).
//
// A line this reader cannot answer for simply goes to parseLogpushLine, whole: a byte above 0x7F in a
// string (UTF-8 to decode), an escape in a key at the top level or in a value it needs, request
// headers whose names could collide (the same name in two cases, a name JSON.parse would order first
// as an array index), nesting deeper than MAX_DEPTH. Duplicate keys need no fallback: the last one
// wins, as in JSON.parse. test/js/replay-logpush-bytes.test.js checks both give the same record over
// generated and hostile lines.
import { parseLogpushLine } from "./logpush.js";
import { timestampMs } from "./timestamp.js";

/** @import { LogRecord } from "./record.js" */

const MAX_DEPTH = 64;
const FALLBACK = -2;
const INVALID = -1;

// The fields a record is made of, by their index in FIELD_NAMES.
const FIELD_NAMES = [
  "EdgeStartTimestamp",
  "ClientIP",
  "ClientRequestHost",
  "ClientRequestMethod",
  "ClientRequestURI",
  "ClientRequestPath",
  "EdgeResponseStatus",
  "RequestHeaders",
  "ClientCountry",
  "ClientASN",
  "EdgeColoCode",
  "ClientRegionCode",
  "BotScore",
  "VerifiedBot",
  "JA3Hash",
  "JA4",
];
const [TIME, IP, HOST, METHOD, URI, PATH, STATUS, HEADERS, COUNTRY, ASN, COLO, REGION, BOT_SCORE, VERIFIED_BOT, JA3, JA4] = FIELD_NAMES.map((_, i) => i);
const FIELDS = FIELD_NAMES.length;
// The fields whose text a record takes (an escape in one sends the line to JSON.parse).
const NEEDS_TEXT = Uint8Array.of(TIME, IP, HOST, METHOD, URI, PATH, COUNTRY, COLO, REGION, JA3, JA4);
const FIELD_BYTES = FIELD_NAMES.map((name) => Buffer.from(name, "latin1"));
// Candidates by key length, so a key is compared with the few names of its length only.
/** @type {number[][]} */
const BY_LENGTH = [];
FIELD_NAMES.forEach((name, i) => (BY_LENGTH[name.length] ??= []).push(i));

// Value kinds.
const ABSENT = 0;
const STRING = 1; // a string without escapes: bytes [start, end) between its quotes
const ESCAPED = 2; // a string with escapes
const NUMBER = 3;
const TRUE = 4;
const FALSE = 5;
const NULL = 6;
const OBJECT = 7;
const ARRAY = 8;

const MAX_HEADERS = 32;

// The state of the line being read (one line at a time).
/** @type {Buffer} */
let b = Buffer.alloc(0);
let lineEnd = 0;
const kind = new Uint8Array(FIELDS);
const valueStart = new Int32Array(FIELDS);
const valueEnd = new Int32Array(FIELDS);
// RequestHeaders' members (of the last RequestHeaders object): name and value spans, value kinds.
let headerCount = 0;
const headerNameStart = new Int32Array(MAX_HEADERS);
const headerNameEnd = new Int32Array(MAX_HEADERS);
const headerKind = new Uint8Array(MAX_HEADERS);
const headerStart = new Int32Array(MAX_HEADERS);
const headerEnd = new Int32Array(MAX_HEADERS);
// What the last string scanned held: an escape, a byte above 0x7F.
let sawEscape = false;

// Byte classes. In a string: 0 plain, 1 quote, 2 backslash, 3 control (invalid), 4 above 0x7F.
const IN_STRING = new Uint8Array(256);
for (let c = 0; c < 32; c++) IN_STRING[c] = 3;
IN_STRING[34] = 1;
IN_STRING[92] = 2;
for (let c = 128; c < 256; c++) IN_STRING[c] = 4;
const HEX = new Uint8Array(256);
for (const c of "0123456789abcdefABCDEF") HEX[c.charCodeAt(0)] = 1;

/** @param {number} i */
function skipSpace(i) {
  const buf = b;
  const end = lineEnd;
  while (i < end) {
    const c = buf[i];
    if (c === 32 || c === 9 || c === 13 || c === 10) i++;
    else return i;
  }
  return i;
}

// The end of the string whose opening quote is at i - 1 (the index after its closing quote), or
// INVALID, or FALLBACK (a byte above 0x7F). Sets sawEscape.
/** @param {number} i */
function scanString(i) {
  sawEscape = false;
  const buf = b;
  const end = lineEnd;
  const classes = IN_STRING;
  for (;;) {
    let cls = 0;
    while (i < end && (cls = classes[buf[i]]) === 0) i++;
    if (i >= end) return INVALID;
    if (cls === 1) return i + 1;
    if (cls === 2) {
      sawEscape = true;
      const e = i + 1 < end ? buf[i + 1] : 0;
      if (e === 34 || e === 92 || e === 47 || e === 98 || e === 102 || e === 110 || e === 114 || e === 116) i += 2;
      else if (e === 117) {
        if (i + 5 >= end || HEX[buf[i + 2]] === 0 || HEX[buf[i + 3]] === 0 || HEX[buf[i + 4]] === 0 || HEX[buf[i + 5]] === 0) return INVALID;
        i += 6;
      } else return INVALID;
      continue;
    }
    return cls === 3 ? INVALID : FALLBACK;
  }
}

/** @param {number} c */
const isDigit = (c) => c >= 48 && c <= 57;

// The end of the number starting at i, or INVALID: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
/** @param {number} i */
function scanNumber(i) {
  if (b[i] === 45) i++;
  if (i >= lineEnd) return INVALID;
  if (b[i] === 48) i++;
  else if (b[i] >= 49 && b[i] <= 57) while (i < lineEnd && isDigit(b[i])) i++;
  else return INVALID;
  if (i < lineEnd && b[i] === 46) {
    i++;
    if (i >= lineEnd || !isDigit(b[i])) return INVALID;
    while (i < lineEnd && isDigit(b[i])) i++;
  }
  if (i < lineEnd && (b[i] === 101 || b[i] === 69)) {
    i++;
    if (i < lineEnd && (b[i] === 43 || b[i] === 45)) i++;
    if (i >= lineEnd || !isDigit(b[i])) return INVALID;
    while (i < lineEnd && isDigit(b[i])) i++;
  }
  return i;
}

// Whether bytes [i, i + word.length) are `word` (true, false, null).
/** @param {number} i @param {number[]} word */
function literalAt(i, word) {
  if (i + word.length > lineEnd) return false;
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word[k]) return false;
  return true;
}
const TRUE_BYTES = [116, 114, 117, 101];
const FALSE_BYTES = [102, 97, 108, 115, 101];
const NULL_BYTES = [110, 117, 108, 108];

// The kind of the value last scanned by scanValue.
let lastKind = ABSENT;

// The end of the JSON value starting at i (no space before it), or INVALID or FALLBACK; lastKind
// says what it was. `depth` counts the containers around it. `role`: 0 a value nobody reads,
// 1 the RequestHeaders object (its members are noted).
/** @param {number} i @param {number} depth @param {number} role @returns {number} */
function scanValue(i, depth, role) {
  if (i >= lineEnd) return INVALID;
  const c = b[i];
  if (c === 34) {
    const end = scanString(i + 1);
    lastKind = sawEscape ? ESCAPED : STRING;
    return end;
  }
  if (c === 123) {
    if (depth >= MAX_DEPTH) return FALLBACK;
    lastKind = OBJECT;
    return scanObject(i + 1, depth + 1, role);
  }
  if (c === 91) {
    if (depth >= MAX_DEPTH) return FALLBACK;
    const end = scanArray(i + 1, depth + 1);
    lastKind = ARRAY;
    return end;
  }
  if (c === 45 || isDigit(c)) {
    lastKind = NUMBER;
    return scanNumber(i);
  }
  if (c === 116 && literalAt(i, TRUE_BYTES)) {
    lastKind = TRUE;
    return i + 4;
  }
  if (c === 102 && literalAt(i, FALSE_BYTES)) {
    lastKind = FALSE;
    return i + 5;
  }
  if (c === 110 && literalAt(i, NULL_BYTES)) {
    lastKind = NULL;
    return i + 4;
  }
  return INVALID;
}

/** @param {number} i @param {number} depth */
function scanArray(i, depth) {
  i = skipSpace(i);
  if (i < lineEnd && b[i] === 93) return i + 1;
  for (;;) {
    i = scanValue(i, depth, 0);
    if (i < 0) return i;
    i = skipSpace(i);
    if (i >= lineEnd) return INVALID;
    if (b[i] === 93) return i + 1;
    if (b[i] !== 44) return INVALID;
    i = skipSpace(i + 1);
  }
}

// The members of an object whose "{" is at i - 1. At depth 1 (the line's object) the fields are
// noted by name; as RequestHeaders (role 1), its members.
/** @param {number} i @param {number} depth @param {number} role @returns {number} */
function scanObject(i, depth, role) {
  if (role === 1) headerCount = 0;
  i = skipSpace(i);
  if (i < lineEnd && b[i] === 125) {
    lastKind = OBJECT;
    return i + 1;
  }
  for (;;) {
    if (i >= lineEnd || b[i] !== 34) return INVALID;
    const nameStart = i + 1;
    i = scanString(nameStart);
    if (i < 0) return i;
    const nameEnd = i - 1;
    const nameEscaped = sawEscape;
    i = skipSpace(i);
    if (i >= lineEnd || b[i] !== 58) return INVALID;
    i = skipSpace(i + 1);
    let field = -1;
    if (depth === 1) {
      // An escaped key could spell a field's name: JSON.parse decides that line.
      if (nameEscaped) return FALLBACK;
      field = fieldOf(nameStart, nameEnd);
    }
    const valueAt = i;
    i = scanValue(i, depth, field === HEADERS ? 1 : 0);
    if (i < 0) return i;
    if (field >= 0) {
      kind[field] = lastKind;
      valueStart[field] = lastKind === STRING || lastKind === ESCAPED ? valueAt + 1 : valueAt;
      valueEnd[field] = lastKind === STRING || lastKind === ESCAPED ? i - 1 : i;
      // A RequestHeaders that is not an object: its members (of an earlier one) no longer count.
      if (field === HEADERS && lastKind !== OBJECT) headerCount = 0;
    } else if (role === 1) {
      if (nameEscaped || headerCount === MAX_HEADERS) return FALLBACK;
      headerNameStart[headerCount] = nameStart;
      headerNameEnd[headerCount] = nameEnd;
      headerKind[headerCount] = lastKind;
      headerStart[headerCount] = valueAt + 1;
      headerEnd[headerCount] = i - 1;
      headerCount++;
    }
    i = skipSpace(i);
    if (i >= lineEnd) return INVALID;
    if (b[i] === 125) {
      lastKind = OBJECT;
      return i + 1;
    }
    if (b[i] !== 44) return INVALID;
    i = skipSpace(i + 1);
  }
}

// scanObject for the line's own object, written out for speed: its keys and string values (nearly
// every byte of a Logpush line) are read here in one loop each; other values go to scanValue.
/** @param {Buffer} buf @param {number} i @param {number} end @returns {number} */
function scanTop(buf, i, end) {
  const classes = IN_STRING;
  while (i < end && (buf[i] === 32 || buf[i] === 9 || buf[i] === 13)) i++;
  if (i < end && buf[i] === 125) return i + 1;
  for (;;) {
    if (i >= end || buf[i] !== 34) return INVALID;
    // The key: any escape or byte above 0x7F sends the line to JSON.parse.
    const nameStart = ++i;
    while (i < end && classes[buf[i]] === 0) i++;
    if (i >= end) return INVALID;
    if (buf[i] !== 34) return classes[buf[i]] === 3 ? INVALID : FALLBACK;
    const field = fieldOf(nameStart, i);
    i++;
    while (i < end && (buf[i] === 32 || buf[i] === 9 || buf[i] === 13)) i++;
    if (i >= end || buf[i] !== 58) return INVALID;
    i++;
    while (i < end && (buf[i] === 32 || buf[i] === 9 || buf[i] === 13)) i++;
    if (i >= end) return INVALID;
    const valueAt = i;
    let valueKind;
    let valueEndAt;
    if (buf[i] === 34) {
      i++;
      while (i < end && classes[buf[i]] === 0) i++;
      if (i < end && buf[i] === 34) {
        valueKind = STRING;
        valueEndAt = i;
        i++;
      } else {
        i = scanString(i);
        if (i < 0) return i;
        valueKind = sawEscape ? ESCAPED : STRING;
        valueEndAt = i - 1;
      }
      if (field >= 0) {
        kind[field] = valueKind;
        valueStart[field] = valueAt + 1;
        valueEnd[field] = valueEndAt;
        if (field === HEADERS) headerCount = 0;
      }
    } else {
      i = scanValue(i, 1, field === HEADERS ? 1 : 0);
      if (i < 0) return i;
      if (field >= 0) {
        kind[field] = lastKind;
        valueStart[field] = valueAt;
        valueEnd[field] = i;
        if (field === HEADERS && lastKind !== OBJECT) headerCount = 0;
      }
    }
    while (i < end && (buf[i] === 32 || buf[i] === 9 || buf[i] === 13)) i++;
    if (i >= end) return INVALID;
    const c = buf[i];
    if (c === 125) return i + 1;
    if (c !== 44) return INVALID;
    i++;
    while (i < end && (buf[i] === 32 || buf[i] === 9 || buf[i] === 13)) i++;
  }
}

// Which field a top-level key names (bytes [start, end), no escapes), or -1.
/** @param {number} start @param {number} end */
function fieldOf(start, end) {
  const candidates = BY_LENGTH[end - start];
  if (candidates === undefined) return -1;
  for (let k = 0; k < candidates.length; k++) {
    const name = FIELD_BYTES[candidates[k]];
    let j = 0;
    while (j < name.length && b[start + j] === name[j]) j++;
    if (j === name.length) return candidates[k];
  }
  return -1;
}

// The string of ASCII bytes [start, end). Keeping the strings of repeated values (addresses, paths)
// in a table by a hash of their bytes was tried: hashing them cost more than Buffer's own copy.
/** @param {number} start @param {number} end */
function asciiString(start, end) {
  return b.latin1Slice(start, end);
}

// The JavaScript value of a field as JSON.parse gives it; objects and arrays as OTHER (only their
// type is ever asked).
const OTHER = Object.freeze({});
/** @param {number} field */
function valueOf(field) {
  switch (kind[field]) {
    case STRING:
      return asciiString(valueStart[field], valueEnd[field]);
    case NUMBER:
      return numberAt(valueStart[field], valueEnd[field]);
    case TRUE:
      return true;
    case FALSE:
      return false;
    case NULL:
      return null;
    case ABSENT:
      return undefined;
    default:
      return OTHER;
  }
}

// A JSON number's value: whole numbers of up to 15 digits are exact in a double and summed here;
// anything else goes through Number(), which rounds as JSON.parse does.
/** @param {number} start @param {number} end */
function numberAt(start, end) {
  if (end - start <= 15) {
    let n = 0;
    let i = start;
    for (; i < end; i++) {
      const c = b[i];
      if (c < 48 || c > 57) break;
      n = n * 10 + (c - 48);
    }
    if (i === end) return n;
  }
  return Number(b.latin1Slice(start, end));
}

// timestampMs of a JSON number. Logpush's default, 19 digits of nanoseconds from 1e18 to 2e18
// (2001 to 2033), is read from its digits: as a double it is off by at most 128 ns, its division by
// 1000 by at most 0.125 us more, so Math.round(n / 1e3) in timestamp.js is the whole microseconds
// when the last three digits are below 247, and one more when they are above 753; between, and for
// every other number, the double itself decides.
/** @param {number} start @param {number} end */
function numberTimeMs(start, end) {
  if (end - start === 19 && b[start] === 49) {
    let micros = 0;
    let i = start;
    for (; i < end - 3; i++) {
      const c = b[i];
      if (c < 48 || c > 57) break;
      micros = micros * 10 + (c - 48);
    }
    const d0 = b[end - 3] - 48;
    const d1 = b[end - 2] - 48;
    const d2 = b[end - 1] - 48;
    if (i === end - 3 && d0 >= 0 && d0 <= 9 && d1 >= 0 && d1 <= 9 && d2 >= 0 && d2 <= 9) {
      const nanos = d0 * 100 + d1 * 10 + d2;
      if (nanos < 247) return Math.floor(micros / 1e3);
      if (nanos > 753) return Math.floor((micros + 1) / 1e3);
    }
  }
  return timestampMs(numberAt(start, end));
}

// The Logpush record, as parseLogpushLine builds it from JSON.parse's object.
function record() {
  // A line with an escaped value it needs (or a header of it) is read by JSON.parse.
  for (let k = 0; k < NEEDS_TEXT.length; k++) if (kind[NEEDS_TEXT[k]] === ESCAPED) return undefined;
  const timeMs = kind[TIME] === NUMBER ? numberTimeMs(valueStart[TIME], valueEnd[TIME]) : timestampMs(kind[TIME] === STRING ? b.latin1Slice(valueStart[TIME], valueEnd[TIME]) : valueOf(TIME));
  if (!(timeMs >= 0) || kind[IP] !== STRING || valueEnd[IP] === valueStart[IP] || kind[METHOD] !== STRING) return null;
  // A method is 1 to 16 capital letters (record.js's METHOD).
  const methodLength = valueEnd[METHOD] - valueStart[METHOD];
  if (methodLength < 1 || methodLength > 16) return null;
  for (let i = valueStart[METHOD]; i < valueEnd[METHOD]; i++) if (b[i] < 65 || b[i] > 90) return null;
  const uriField = kind[URI] === STRING ? URI : PATH;
  if (kind[uriField] !== STRING || valueEnd[uriField] === valueStart[uriField] || b[valueStart[uriField]] !== 47) return null;
  let headers = null;
  if (kind[HEADERS] === OBJECT) {
    headers = keptHeaders(valueStart[HEADERS], valueEnd[HEADERS]);
    if (headers === undefined) return undefined;
  }
  const status = kind[STATUS] === NUMBER ? numberAt(valueStart[STATUS], valueEnd[STATUS]) : 0;
  return {
    timeMs,
    ip: asciiString(valueStart[IP], valueEnd[IP]),
    method: asciiString(valueStart[METHOD], valueEnd[METHOD]),
    uri: asciiString(valueStart[uriField], valueEnd[uriField]),
    host: kind[HOST] === STRING ? asciiString(valueStart[HOST], valueEnd[HOST]) : "",
    status: Number.isInteger(status) ? status : 0,
    headers,
    cf: edgeFields(),
  };
}

// The same RequestHeaders text (a client's token and key, line after line) gives the same frozen
// object: building an object without a prototype costs more than the rest of the record.
const HEADER_SLOTS = 4096;
/** @type {string[]} */
const headerTexts = new Array(HEADER_SLOTS).fill("");
/** @type {(Readonly<Record<string, string>> | null)[]} */
const headerObjects = new Array(HEADER_SLOTS).fill(null);

/** @param {number} start @param {number} end */
function keptHeaders(start, end) {
  const buf = b;
  const length = end - start;
  let hash = length;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ buf[i], 0x01000193);
  const slot = (hash ^ (hash >>> 12)) & (HEADER_SLOTS - 1);
  const kept = headerTexts[slot];
  if (kept.length === length) {
    let i = 0;
    while (i < length && kept.charCodeAt(i) === buf[start + i]) i++;
    if (i === length) return headerObjects[slot];
  }
  const headers = loggedHeaders();
  if (headers === undefined) return undefined;
  headerTexts[slot] = buf.latin1Slice(start, end);
  headerObjects[slot] = headers === null ? null : Object.freeze(headers);
  return headers;
}

// RequestHeaders' string members, names in lower case; null when none; undefined when JSON.parse must
// decide (an escaped string value, names that collide or that JSON.parse would reorder).
function loggedHeaders() {
  /** @type {Record<string, string>} */
  const headers = Object.create(null);
  let any = false;
  for (let h = 0; h < headerCount; h++) {
    const start = headerNameStart[h];
    const end = headerNameEnd[h];
    // A name of digits only may be an array index, which JSON.parse's object lists first.
    let digits = true;
    for (let i = start; i < end && digits; i++) digits = isDigit(b[i]);
    if (digits) return undefined;
    const name = asciiString(start, end).toLowerCase();
    for (let k = 0; k < h; k++) if (sameLowerCase(headerNameStart[k], headerNameEnd[k], start, end)) return undefined;
    if (headerKind[h] === ESCAPED) return undefined;
    if (headerKind[h] !== STRING) continue;
    headers[name] = asciiString(headerStart[h], headerEnd[h]);
    any = true;
  }
  return any ? headers : null;
}

/** @param {number} a @param {number} aEnd @param {number} c @param {number} cEnd */
function sameLowerCase(a, aEnd, c, cEnd) {
  if (aEnd - a !== cEnd - c) return false;
  for (let i = 0; i < aEnd - a; i++) if (lower(b[a + i]) !== lower(b[c + i])) return false;
  return true;
}
/** @param {number} c */
const lower = (c) => (c >= 65 && c <= 90 ? c + 32 : c);

// request.cf from the edge fields, as logpush.js's edgeFields; null when the line has none of them.
function edgeFields() {
  if (kind[COUNTRY] === ABSENT && kind[ASN] === ABSENT && kind[COLO] === ABSENT && kind[BOT_SCORE] === ABSENT && kind[JA3] === ABSENT && kind[JA4] === ABSENT) return null;
  /** @type {Record<string, unknown>} */
  const cf = {};
  const country = valueOf(COUNTRY);
  if (typeof country === "string" && country !== "") cf.country = country.toUpperCase();
  const asn = valueOf(ASN);
  if (Number.isInteger(asn)) cf.asn = asn;
  const colo = valueOf(COLO);
  if (typeof colo === "string") cf.colo = colo;
  const region = valueOf(REGION);
  if (typeof region === "string") cf.regionCode = region;
  /** @type {Record<string, unknown>} */
  const bot = {};
  const score = valueOf(BOT_SCORE);
  if (typeof score === "number") bot.score = score;
  const verified = valueOf(VERIFIED_BOT);
  if (typeof verified === "boolean") bot.verifiedBot = verified;
  const ja3 = valueOf(JA3);
  if (typeof ja3 === "string") bot.ja3Hash = ja3;
  const ja4 = valueOf(JA4);
  if (typeof ja4 === "string") bot.ja4 = ja4;
  if (Object.keys(bot).length > 0) cf.botManagement = bot;
  return cf;
}

/**
 * parseLogpushBytes reads the line in bytes [start, end) of `bytes` (no newline); the same answer as
 * parseLogpushLine on its text, null when it is not a Logpush request this tool can replay.
 * @param {Buffer} bytes
 * @param {number} start
 * @param {number} end
 * @param {(bytes: Buffer, start: number, end: number) => string} text The line's text, for the lines
 *   JSON.parse decides.
 * @returns {LogRecord | null}
 */
export function parseLogpushBytes(bytes, start, end, text) {
  b = bytes;
  lineEnd = end;
  let i = skipSpace(start);
  // JSON.parse's answer for anything but an object, valid or not, is no record.
  if (i >= end || bytes[i] !== 123) return null;
  kind.fill(ABSENT);
  headerCount = 0;
  i = scanTop(bytes, i + 1, end);
  if (i === INVALID) return null;
  if (i !== FALLBACK) {
    if (skipSpace(i) !== end) return null;
    const answer = record();
    if (answer !== undefined) return answer;
  }
  return parseLogpushLine(text(bytes, start, end));
}
