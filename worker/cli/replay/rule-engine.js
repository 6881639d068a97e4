// Replays requests through --rule rules with the library's createLimiter: the rules a request matches
// (prefix, methods) are checked in one all-or-nothing call, as a createLimiter with those rules does,
// on a clock that reads the log line's time. Each limiter is createLimiter's own engine (createEngine
// with the "fetch" surface), asked through evaluateNow, so a request decided synchronously (the memory
// store, these synchronous key functions) costs no promise. Keys are the library's key helpers (keys.js: ip(),
// user(bearerToken) else ip(), apiKey(header), route() for path), fed by the log's fields through
// LogRequest; costs are the rules' own. No path is refused: createLimiter refuses none.
import { apiKey, bearerToken, compose, createEngine, createRouter, firstOf, ip, route, user } from "./library.js";
import { requestPath } from "./path.js";
import { LogRequest } from "./request.js";

/** @import { CliRule } from "./rules.js" */
/** @import { LogRecord } from "./formats/record.js" */
/** @import { ReplayRule, RequestOutcome, VerdictSink } from "./gateway-engine.js" */

// Addresses repeat line after line, and ip() parses each one anew (addresses.js). Its answer depends
// on the address alone (cf-connecting-ip; no forwarded-for is trusted), so the answer for each
// address is kept, up to REMEMBERED addresses (then all forgotten at once): the key is still ip()'s
// own, and the same string object comes back, which every later table finds faster.
const REMEMBERED = 1 << 16;
const libraryIp = ip();
/** @type {Map<string, unknown>} */
let ipKeys = new Map();
/** @param {any} request */
function clientIp(request) {
  const address = request.record.ip;
  let key = ipKeys.get(address);
  if (key === undefined) {
    key = libraryIp(request);
    if (ipKeys.size >= REMEMBERED) ipKeys = new Map();
    ipKeys.set(address, key);
  }
  return key;
}
const userOrIp = firstOf(user(bearerToken), clientIp);
// What a request came to, shared: one object per answer, not per line.
const NO_RULE = Object.freeze({ outcome: /** @type {RequestOutcome} */ ("no_route"), blocked: false });
const ADMITTED = Object.freeze({ outcome: /** @type {RequestOutcome} */ ("checked"), blocked: false });
const BLOCKED = Object.freeze({ outcome: /** @type {RequestOutcome} */ ("checked"), blocked: true });
const pathKey = route();

/** @param {string} part */
function keyPart(part) {
  if (part === "ip") return clientIp;
  if (part === "user") return userOrIp;
  if (part === "path") return pathKey;
  return apiKey(part.slice("apiKey:".length));
}

/**
 * createRuleEngine builds the engine of parsed --rule rules. Returns { rules, decide(record, sink) }.
 * @param {readonly CliRule[]} cliRules
 */
export function createRuleEngine(cliRules) {
  let now = 0;
  const clock = () => now;
  const specs = cliRules.map((rule) => {
    const parts = rule.key.map(keyPart);
    return {
      name: rule.name,
      algorithm: rule.algorithm,
      limit: rule.limit,
      windowMs: rule.windowMs,
      ...(rule.burst > 0 ? { burst: rule.burst } : {}),
      ...(rule.countDenied ? { countDenied: true } : {}),
      keyCapacity: rule.keyCapacity,
      cost: rule.cost,
      key: parts.length === 1 ? parts[0] : compose(...parts),
    };
  });
  // One limiter per set of rules a request can match; rules are registered by their stable id, so
  // every limiter that has a rule shares its counts (options.js, isolate.js).
  const limiters = new Map();
  /** @param {number[]} indexes */
  const limiterFor = (indexes) => {
    const id = indexes.join(",");
    let limiter = limiters.get(id);
    if (limiter === undefined) {
      limiter = createEngine({ rules: indexes.map((i) => specs[i]), clock }, "fetch");
      limiters.set(id, limiter);
    }
    return limiter;
  };
  // Build every rule's limiter now: what the library refuses (a table too big) fails before any line.
  cliRules.forEach((_, i) => limiterFor([i]));
  const filters = cliRules.map((rule) => ({ match: createRouter([{ prefix: rule.prefix }]), methods: rule.methods }));
  const allRules = cliRules.map((_, i) => i);
  const unfiltered = cliRules.every((rule) => rule.prefix === "/" && rule.methods === null);
  const everyRule = limiterFor(allRules);
  const request = new LogRequest(/** @type {LogRecord} */ ({}));
  // What key, cost and skip functions receive, (request, env, ctx), as createLimiter's limit() passes it.
  const args = [request, undefined, undefined];

  /** @type {ReplayRule[]} */
  const rules = cliRules.map((rule) => ({
    name: rule.name,
    algorithm: rule.algorithm,
    limit: rule.limit,
    windowMs: rule.windowMs,
    burst: rule.burst,
    cost: rule.cost,
    countDenied: rule.countDenied,
    keyCapacity: rule.keyCapacity,
    key: rule.key,
    mode: "enforce",
    routes: [rule.prefix],
    store: "memory",
  }));

  /**
   * @param {LogRecord} record
   * @param {VerdictSink} sink
   * @returns {{ outcome: RequestOutcome, blocked: boolean } | Promise<{ outcome: RequestOutcome, blocked: boolean }>}
   */
  function decideRecord(record, sink) {
    let matching = allRules;
    if (!unfiltered) {
      // A path with no canonical form is under no prefix: only the rules without one see it.
      const canonical = requestPath(record.uri);
      const path = canonical.path;
      matching = allRules.filter((i) => (path === undefined ? cliRules[i].prefix === "/" : filters[i].match(path) !== null) && (filters[i].methods === null || filters[i].methods.includes(record.method)));
      if (matching.length === 0) return NO_RULE;
    }
    now = record.timeMs;
    // One request object, pointed at each record in turn: requests are decided one after another,
    // and the key functions read it before the limiter's call returns.
    request.record = record;
    const decision = (matching === allRules ? everyRule : limiterFor(matching)).evaluateNow(args, undefined, undefined);
    // Only a key hashed for its length (past the core's bound) makes the memory store's decision wait.
    if (decision instanceof Promise) return decision.then((settled) => verdicts(settled, matching, sink));
    return verdicts(decision, matching, sink);
  }

  /**
   * Each matching rule's verdict, to the sink; what the request came to.
   * @param {any} decision @param {number[]} matching @param {VerdictSink} sink
   */
  function verdicts(decision, matching, sink) {
    const checks = /** @type {any} */ (decision).checks;
    const keys = /** @type {any} */ (decision).keys;
    for (let j = 0; j < matching.length; j++) {
      const rule = matching[j];
      sink(rule, keys[j], checks[j].allowed ? "admitted" : "denied", cliRules[rule].cost);
    }
    return decision.allowed ? ADMITTED : BLOCKED;
  }

  return { kind: /** @type {const} */ ("rules"), rules, lockoutRules: 0, decide: decideRecord };
}
