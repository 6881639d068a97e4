// One named field of a request body, read the way every parser upstream would agree on, or refused.
//
// A login's account is read from the body twice: here (to count failures against it) and by the real
// handler (to check the password). Where the two readings can differ, an attacker names a decoy to the
// counter and the victim to the handler, and guesses the victim's password without ever being locked
// (issue 23). So the body is parsed by its declared Content-Type only, and every spelling another
// parser could take for the field makes the body ambiguous, hence refused:
//  - JSON (`application/json`, `application/<x>+json`; charset, when given, utf-8): the top-level
//    object's keys, compared after unescaping and Unicode case folding (Go's encoding/json and
//    ASP.NET match keys without regard to case, and Go folds the Kelvin sign and the long s too);
//  - forms (`application/x-www-form-urlencoded`): names decoded as the WHATWG URL standard says
//    (`+` is a space, escapes are UTF-8), compared after case folding, with PHP's reading too (a
//    `name[...]` suffix is the same field, `.` and ` ` read as `_`).
// The field is taken only when exactly one key matches under those comparisons, spelt exactly as
// configured, and its value is a string. Any other type (multipart, text, XML...) is refused: its
// parsers differ too much to agree with.

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** The Content-Types bodyField reads, for documentation and error messages. */
export const ACCOUNT_BODY_TYPES = Object.freeze(["application/json", "application/*+json", "application/x-www-form-urlencoded"]);

/**
 * What bodyField found: `{ value }`, or `{ problem }` where problem is
 *  - "unsupported_type": the declared Content-Type is none of ACCOUNT_BODY_TYPES (or no type, or a
 *    charset other than utf-8);
 *  - "malformed": not valid UTF-8, not JSON with an object at the top, or a form with a bad escape;
 *  - "ambiguous": more than one key reads as the field to some parser;
 *  - "missing": no key is the field, or its value is not a string.
 * @typedef {{ value: string, problem?: undefined } | { value?: undefined, problem: "unsupported_type" | "malformed" | "ambiguous" | "missing" }} BodyField
 */

/**
 * Unicode case folding for key comparison: NFKC, then upper- and lower-cased (so "ß" and "SS", "K"
 * and the Kelvin sign, "s" and the long s fold alike).
 * @param {string} text
 * @returns {string}
 */
export function foldKey(text) {
  return text.normalize("NFKC").toUpperCase().toLowerCase().normalize("NFKC");
}

/**
 * The media type of a Content-Type value ("json", "form"), or null when bodyField does not read it.
 * @param {string | null} contentType
 * @returns {"json" | "form" | null}
 */
export function bodyKind(contentType) {
  if (contentType === null) return null;
  const [essence, ...parameters] = contentType.split(";");
  const type = essence.trim().toLowerCase();
  for (const parameter of parameters) {
    const [name, value = ""] = parameter.split("=");
    if (name.trim().toLowerCase() !== "charset") continue;
    const charset = value.trim().replace(/^"(.*)"$/, "$1").toLowerCase();
    if (charset !== "utf-8" && charset !== "utf8") return null;
  }
  if (type === "application/json" || /^application\/[a-z0-9!#$&^_.-]+\+json$/.test(type)) return "json";
  if (type === "application/x-www-form-urlencoded") return "form";
  return null;
}

/**
 * bodyField reads the string field `name` of a body of `contentType` from its `bytes` (see the top of
 * this file for what is refused and why).
 * @param {Uint8Array} bytes
 * @param {string | null} contentType
 * @param {string} name
 * @returns {BodyField}
 */
export function bodyField(bytes, contentType, name) {
  const kind = bodyKind(contentType);
  if (kind === null) return { problem: "unsupported_type" };
  let text;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { problem: "malformed" };
  }
  return kind === "json" ? jsonBodyField(text, name) : formBodyField(text, name);
}

/**
 * The field `name` of JSON `text` (see bodyField).
 * @param {string} text
 * @param {string} name
 * @returns {BodyField}
 */
export function jsonBodyField(text, name) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    return { problem: "malformed" };
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) return { problem: "malformed" };
  const folded = foldKey(name);
  const keys = topLevelKeys(text).filter((key) => foldKey(key) === folded);
  if (keys.length > 1) return { problem: "ambiguous" };
  if (keys.length === 0 || keys[0] !== name) return { problem: "missing" };
  const value = body[name];
  return typeof value === "string" ? { value } : { problem: "missing" };
}

// PHP's reading of a form name: the part before "[" is the variable, and "." and " " in it become "_".
/** @param {string} name @returns {string} */
function phpName(name) {
  const bracket = name.indexOf("[");
  return (bracket === -1 ? name : name.slice(0, bracket)).replace(/[. ]/g, "_");
}

/** @param {string} text @returns {string} */
function decodeFormComponent(text) {
  return decodeURIComponent(text.replace(/\+/g, " "));
}

/**
 * The field `name` of form `text` (see bodyField).
 * @param {string} text
 * @param {string} name
 * @returns {BodyField}
 */
export function formBodyField(text, name) {
  const readings = [foldKey(name), foldKey(phpName(name))];
  let found = /** @type {string | undefined} */ (undefined);
  let matches = 0;
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const equals = pair.indexOf("=");
    let key;
    let value;
    try {
      key = decodeFormComponent(equals === -1 ? pair : pair.slice(0, equals));
      value = decodeFormComponent(equals === -1 ? "" : pair.slice(equals + 1));
    } catch {
      return { problem: "malformed" };
    }
    if (!readings.includes(foldKey(key)) && !readings.includes(foldKey(phpName(key)))) continue;
    matches++;
    if (key === name) found = value;
  }
  if (matches > 1) return { problem: "ambiguous" };
  return found === undefined ? { problem: "missing" } : { value: found };
}

/**
 * The keys of the top-level object of `text` (valid JSON, an object at the top), unescaped, in order,
 * duplicates included (JSON.parse keeps only one of them).
 * @param {string} text
 * @returns {string[]}
 */
export function topLevelKeys(text) {
  const keys = [];
  let depth = 0;
  let expectingKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (depth === 1 && expectingKey) {
        keys.push(JSON.parse(text.slice(i, end + 1)));
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
  return keys;
}
