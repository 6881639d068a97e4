// Account names as lockout counts them. A login form's name is typed by people and by attackers: the
// same account must not be several counters because of case, width or surrounding space, or an
// attacker gets maxFailures guesses per spelling.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { jsonBodyField } from "./body-field.js";
import { DEFAULT_MAX_BODY_BYTES, readBoundedBody } from "./bounded-body.js";

// Default-ignorable code points (U+00AD soft hyphen, U+200B..U+200D zero widths, U+2060, U+FEFF,
// variation selectors, tags...: Unicode's whole Default_Ignorable_Code_Point set) render as nothing,
// and databases with Unicode collations compare names as if they were not there: "vic\u200Btim" is
// "victim" to them, so it is to the lockout's counters too.
const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
// NUL and other control characters: a C-string backend ends the name at a NUL ("victim\0x" is
// "victim"), others keep it, and no one types them. No normal form agrees with every backend, so a
// name holding one names no account (the attempt is refused).
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * normalizeAccount is lockout's default account normalization: Unicode NFKC (compatibility forms such
 * as fullwidth "ａ" become "a"), default-ignorable code points removed, surrounding white space removed,
 * then case folded (upper-cased and lower-cased, so that "ß" and "SS" fold alike, as Unicode's full
 * case folding does), then NFKC again (folding can leave text unnormalized). "Alice", "alice ",
 * "ａlice" and "al\u00ADice" are one account. A name holding a control character (NUL included) gives
 * "", which names no account: the attempt is refused (lockout answers 400).
 */
/**
 * @param {string} name
 * @returns {string}
 */
export function normalizeAccount(name) {
  if (CONTROL.test(name)) return "";
  return name.normalize("NFKC").replace(DEFAULT_IGNORABLE, "").trim().toUpperCase().toLowerCase().normalize("NFKC").replace(DEFAULT_IGNORABLE, "");
}

/**
 * accountSpelling is what the gateway does to an account name even where a rule turns normalization
 * off: default-ignorable code points removed, and null (refused) for a name with a control character.
 * @param {string} name
 * @returns {string | null}
 */
export function accountSpelling(name) {
  if (CONTROL.test(name)) return null;
  return name.replace(DEFAULT_IGNORABLE, "");
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

// A Hono context carries the Request as c.req.raw; createLockout passes the Request itself.
/** @param {unknown} input @returns {Request} */
function requestOf(input) {
  const context = /** @type {{ req?: { raw?: Request } }} */ (input);
  return input !== null && typeof input === "object" && context.req?.raw !== undefined ? context.req.raw : /** @type {Request} */ (input);
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
 * object has the field more than once, in any case (`"username"` and `"Username"`): parsers disagree
 * on which of duplicates wins (most take the last, some the first, some refuse; Go's and ASP.NET's
 * match keys without regard to case), and an account read differently here and by the handler would
 * let an attacker count failures against a decoy while guessing another account's password
 * (body-field.js).
 * @param {BufferSource} bytes
 * @param {string} name
 * @returns {string | undefined}
 */
export function fieldOf(bytes, name) {
  let text;
  try {
    text = decoder.decode(bytes);
  } catch {
    return undefined;
  }
  return jsonBodyField(text, name).value;
}
