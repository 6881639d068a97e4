// Account names as lockout counts them. A login form's name is typed by people and by attackers: the
// same account must not be several counters because of case, width or surrounding space, or an
// attacker gets maxFailures guesses per spelling.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { DEFAULT_MAX_BODY_BYTES, readBoundedBody } from "./bounded-body.js";

/**
 * normalizeAccount is lockout's default account normalization: Unicode NFKC (compatibility forms such
 * as fullwidth "ａ" become "a"), surrounding white space removed, then case folded (upper-cased and
 * lower-cased, so that "ß" and "SS" fold alike, as Unicode's full case folding does), then NFKC again
 * (folding can leave text unnormalized). "Alice", "alice " and "ａlice" are one account.
 */
/**
 * @param {string} name
 * @returns {string}
 */
export function normalizeAccount(name) {
  return name.normalize("NFKC").trim().toUpperCase().toLowerCase().normalize("NFKC");
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

// A Hono context carries the Request as c.req.raw; createLockout passes the Request itself.
function requestOf(input) {
  return input !== null && typeof input === "object" && input.req?.raw !== undefined ? input.req.raw : input;
}

/**
 * jsonField is a key function reading the string field `name` of the request's JSON object body:
 * jsonField("username") for `{ "username": "alice", ... }`. It reads a copy of the body (the handler
 * still reads the original) of at most `maxBytes` (default 16 KiB); a longer body, a body that is not
 * UTF-8 JSON with an object at the top, or a field that is missing or not a string gives undefined,
 * which lockout treats as a request without an account; so does a body naming the field twice (see
 * fieldOf).
 */
/**
 * @param {string} name
 * @param {{ maxBytes?: number }} [options]
 * @returns {(input: import("./keys.js").KeyInput) => Promise<string | undefined>}
 */
export function jsonField(name, { maxBytes = DEFAULT_MAX_BODY_BYTES } = {}) {
  if (typeof name !== "string" || name === "") throw new SluiceConfigError("jsonField(name)", `must be a field name; got ${describe(name)}`);
  if (!Number.isInteger(maxBytes) || maxBytes < 1) {
    throw new SluiceConfigError("jsonField({ maxBytes })", `must be a whole number of bytes >= 1; got ${describe(maxBytes)}`);
  }
  return async function jsonFieldKey(input) {
    const request = requestOf(input);
    if (request.body === null || request.bodyUsed) return undefined;
    const bytes = await readBoundedBody(request.clone(), maxBytes);
    return bytes === null ? undefined : fieldOf(bytes, name);
  };
}

/**
 * fieldOf returns the string field `name` of the JSON object in `bytes`, or undefined, also when the
 * object has the field more than once: parsers disagree on which of duplicates wins (most take the
 * last, some the first, some refuse), and an account read differently here and by the handler would
 * let an attacker count failures against a decoy while guessing another account's password.
 */
export function fieldOf(bytes, name) {
  let text;
  let body;
  try {
    text = decoder.decode(bytes);
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (body === null || typeof body !== "object" || Array.isArray(body) || !Object.hasOwn(body, name)) return undefined;
  const value = body[name];
  if (typeof value !== "string" || topLevelCount(text, name) !== 1) return undefined;
  return value;
}

// How many times the object `text` (valid JSON, an object at the top) has the key `name` at its top
// level, keys compared after unescaping ("user\u006eame" is "username").
function topLevelCount(text, name) {
  let depth = 0;
  let expectingKey = false;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (depth === 1 && expectingKey) {
        if (JSON.parse(text.slice(i, end + 1)) === name) count++;
        expectingKey = false;
      }
      i = end;
    } else if (ch === "{" || ch === "[") {
      depth++;
      if (depth === 1) expectingKey = true;
    } else if (ch === "}" || ch === "]") {
      depth--;
    } else if (ch === "," && depth === 1) {
      expectingKey = true;
    }
  }
  return count;
}
