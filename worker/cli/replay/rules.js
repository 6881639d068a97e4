// The --rule grammar: one rule per flag, words separated by spaces.
//
//   rule      = key SP quota [SP algorithm] *(SP option)
//   key       = part *("+" part)            part = "ip" | "user" | "path" | "apiKey:" header-name
//   quota     = limit "/" [count] unit       limit, count: whole numbers; unit = "ms" | "s" | "m" | "h" | "d"
//   algorithm = "fixed-window" | "sliding-log" | "sliding-counter" | "token-bucket" | "leaky-bucket" | "gcra"
//   option    = "burst=" n | "cost=" n | "count-denied" | "name=" name | "capacity=" n
//             | "prefix=" path | "methods=" METHOD *("," METHOD)
//
//   --rule "ip 100/60s sliding-counter"
//   --rule "user+path 10/1m token-bucket burst=20 prefix=/api/checkout methods=POST"
//
// Key parts mean what they mean in the gateway (ip: cf-connecting-ip, IPv6 by /64; user: the bearer
// token, else the IP; apiKey:<name>: that request header), plus path: the request's path in canonical
// form, letters folded to lower case (the library's route() key with createLimiter).
// The algorithm defaults to the library's (sliding-counter). prefix and methods narrow the requests a
// rule sees (prefix matches whole segments, ignoring ASCII case, as gateway routes do); a request is
// checked against every rule it matches in one all-or-nothing call, as createLimiter's rules are.
// Limits, windows and bursts are validated by the library (options.js), which names the field.
import { ReplayUsageError } from "./errors.js";
import { ALGORITHMS, SluiceConfigError, normalizeRuleSpec } from "./library.js";

/**
 * A --rule, parsed and validated.
 * @typedef {object} CliRule
 * @property {string} name
 * @property {string[]} key Key parts: "ip", "user", "path", "apiKey:<lower-case header>".
 * @property {string} algorithm
 * @property {number} limit
 * @property {number} windowMs
 * @property {number} burst 0 when not given.
 * @property {number} cost
 * @property {boolean} countDenied
 * @property {number} keyCapacity
 * @property {string} prefix "/" when not given.
 * @property {string[] | null} methods null: every method.
 * @property {string} text The flag as given.
 */

const UNIT_MS = Object.freeze({ ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 });
const QUOTA = /^(\d+)\/(\d*)(ms|s|m|h|d)$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const WHOLE = /^\d+$/;
const PREFIX = /^\/[A-Za-z0-9\-._~!$&'()*+,=:@/]*$/;
const METHOD = /^[A-Z]{1,16}$/;

/** The grammar, for error messages and --help. */
export const RULE_GRAMMAR = 'KEY LIMIT/WINDOW [ALGORITHM] [burst=N] [cost=N] [count-denied] [name=NAME] [capacity=N] [prefix=/PATH] [methods=GET,POST]; KEY is ip, user, path or apiKey:<header>, joined by "+"; WINDOW like 60s, 1m, 500ms, 1h, 1d';

/**
 * parseRule reads the `index`-th --rule (from 0); throws ReplayUsageError naming the rule and the word
 * at fault.
 * @param {string} text
 * @param {number} index
 * @returns {CliRule}
 */
export function parseRule(text, index) {
  const where = `--rule ${index + 1} (${JSON.stringify(text)})`;
  const fail = (/** @type {string} */ problem) => new ReplayUsageError(where, `${problem}; expected ${RULE_GRAMMAR}`);
  const words = text.trim().split(/\s+/);
  if (words.length < 2 || words[0] === "") throw fail("needs a key and a quota");
  const key = parseKey(words[0], fail);
  const quota = QUOTA.exec(words[1]);
  if (quota === null) throw fail(`"${words[1]}" is not a quota like 100/60s`);
  const windowMs = Number(quota[2] === "" ? 1 : quota[2]) * UNIT_MS[/** @type {keyof typeof UNIT_MS} */ (quota[3])];
  /** @type {Record<string, any>} */
  const spec = { limit: Number(quota[1]), windowMs };
  let rest = words.slice(2);
  if (rest.length > 0 && !rest[0].includes("=") && rest[0] !== "count-denied") {
    if (!ALGORITHMS.includes(/** @type {any} */ (rest[0]))) throw fail(`unknown algorithm "${rest[0]}" (one of ${ALGORITHMS.join(", ")})`);
    spec.algorithm = rest[0];
    rest = rest.slice(1);
  }
  let name = `rule${index + 1}`;
  let cost = 1;
  let prefix = "/";
  /** @type {string[] | null} */
  let methods = null;
  const seen = new Set();
  for (const word of rest) {
    const at = word.indexOf("=");
    const option = at < 0 ? word : word.slice(0, at);
    const value = at < 0 ? "" : word.slice(at + 1);
    if (seen.has(option)) throw fail(`${option} is given twice`);
    seen.add(option);
    if (option === "count-denied" && at < 0) spec.countDenied = true;
    else if (option === "burst" && WHOLE.test(value)) spec.burst = Number(value);
    else if (option === "capacity" && WHOLE.test(value)) spec.keyCapacity = Number(value);
    else if (option === "cost" && WHOLE.test(value) && Number(value) >= 1 && Number(value) <= 2 ** 31) cost = Number(value);
    else if (option === "name" && NAME.test(value)) name = value;
    else if (option === "prefix" && PREFIX.test(value) && !value.includes("//")) prefix = value.length > 1 && value.endsWith("/") ? value.slice(0, -1) : value;
    else if (option === "methods" && value.split(",").every((m) => METHOD.test(m))) methods = value.split(",");
    else if (["count-denied", "burst", "capacity", "cost", "name", "prefix", "methods"].includes(option)) throw fail(`"${word}" has a bad value`);
    else throw fail(`unknown word "${word}"`);
  }
  spec.name = name;
  let normalized;
  try {
    normalized = normalizeRuleSpec(spec);
  } catch (error) {
    if (error instanceof SluiceConfigError) throw new ReplayUsageError(where, `${error.field}: ${error.problem}`);
    throw error;
  }
  return {
    name,
    key,
    algorithm: normalized.algorithm,
    limit: normalized.limit,
    windowMs: normalized.windowMs,
    burst: normalized.burst,
    cost,
    countDenied: spec.countDenied === true,
    keyCapacity: normalized.keyCapacity,
    prefix,
    methods,
    text,
  };
}

/** @param {string} word @param {(problem: string) => Error} fail @returns {string[]} */
function parseKey(word, fail) {
  const parts = word.split("+").map((part) => {
    if (part === "ip" || part === "user" || part === "path") return part;
    if (part.startsWith("apiKey:") && HEADER_NAME.test(part.slice(7))) return `apiKey:${part.slice(7).toLowerCase()}`;
    throw fail(`unknown key part "${part}" (ip, user, path or apiKey:<header>)`);
  });
  if (new Set(parts).size !== parts.length) throw fail(`a key part appears twice in "${word}"`);
  return parts;
}

/**
 * checkRuleNames throws when two rules share a name (their statistics and state would merge).
 * @param {readonly CliRule[]} rules
 */
export function checkRuleNames(rules) {
  rules.forEach((rule, i) => {
    const first = rules.findIndex((other) => other.name === rule.name);
    if (first !== i) throw new ReplayUsageError(`--rule ${i + 1}`, `name "${rule.name}" is already --rule ${first + 1}'s`);
  });
}
