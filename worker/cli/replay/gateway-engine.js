// Replays requests through a gateway.config.json as the gateway decides them (gateway.js): canonical
// path (else 400), route by longest prefix (else 404), method (else 405), the deny list (else 403;
// the allow list skips the rules), the upstream path (else 400), then decide.js over the route's rules, store group by store group, each group one all-or-nothing limiter call, with the
// rules' modes and rollouts. The limiters are the gateway's own (createLimiterFactory) on a clock that
// reads the log line's time.
//
// What differs from a deployment, on purpose: every store counts in this process's core, so a rule on
// "durable" or "kv" is replayed as one exact global count (what the Durable Object gives; KV is
// approximate in production and would admit more), and a "memory" rule as one isolate that saw all the
// traffic (in production each isolate counts its share). Lockout rules are not replayed: they count
// failed logins, which need the login's body and outcome. Nothing is forwarded anywhere.
import { createAccessList, createLimiterFactory, createRouter, decide, upstreamTarget, validateConfig } from "./library.js";
import { requestPath } from "./path.js";
import { LogRequest } from "./request.js";

/** @import { LogRecord } from "./formats/record.js" */

/**
 * One rule as the replay reports it. `routes` lists the route prefixes the rule is on (a rule named
 * the same on several routes is one rule with one state, as the gateway requires).
 * @typedef {{ name: string, algorithm: string, limit: number, windowMs: number, burst: number, cost: number,
 *   countDenied: boolean, keyCapacity: number, key: string[], mode: string, routes: string[], store: string }} ReplayRule
 */

/**
 * What one request came to: `outcome` is "checked" (the rules decided; `blocked` when an enforced rule
 * denied), why the gateway refused it before any rule ("bad_path", "no_route", "method", "deny_list"),
 * or "allow_list" (the allow list let it skip the rules).
 * @typedef {"checked" | "bad_path" | "no_route" | "method" | "deny_list" | "allow_list"} RequestOutcome
 */

/**
 * Receives each rule's verdict on a checked request: `event` is "admitted", "denied" (an enforced
 * rule), "would_have_denied" (shadow, or outside a rollout) or "unchecked" (a store group after a
 * blocking one).
 * @typedef {(rule: number, key: string, event: string, cost: number) => void} VerdictSink
 */

/**
 * createGatewayEngine builds the engine of a configuration (raw JSON; validated by the gateway's own
 * validator, which throws ConfigError naming the field). Returns { rules, decide(record, sink) }.
 * @param {unknown} raw
 * @param {string} source Where the configuration came from, for its errors.
 */
export function createGatewayEngine(raw, source) {
  const config = validateConfig(raw, source);
  let now = 0;
  const baseFactory = createLimiterFactory({ stores: config.stores, clock: () => now });
  // Every store counts here (see above); the groups stay the gateway's, so the order and the
  // all-or-nothing extent of each limiter call are the deployment's.
  const factory = (/** @type {any[]} */ rules, /** @type {any} */ context) =>
    baseFactory(rules.map((rule) => (rule.store === "memory" ? rule : { ...rule, store: "memory" })), context);

  /** @type {ReplayRule[]} */
  const rules = [];
  const ruleIndex = new Map();
  const ruleIndexes = config.routes.map((route) =>
    route.rules.map((rule) => {
      if (rule.kind === "lockout") return -1;
      let index = ruleIndex.get(rule.name);
      if (index === undefined) {
        index = rules.length;
        ruleIndex.set(rule.name, index);
        rules.push({
          name: rule.name,
          algorithm: rule.algorithm,
          limit: rule.limit,
          windowMs: rule.windowMs,
          burst: rule.burst,
          cost: 1,
          countDenied: false,
          keyCapacity: rule.keyCapacity,
          key: [...rule.key],
          mode: rule.rollout < 1 ? `enforce (rollout ${rule.rollout})` : rule.mode,
          routes: [],
          store: rule.store,
        });
      }
      rules[index].routes.push(route.prefix);
      return index;
    }),
  );
  const lockoutRules = config.routes.reduce((n, route) => n + route.rules.filter((rule) => rule.kind === "lockout").length, 0);

  const match = createRouter(config.routes);
  const lists = config.lists ? createAccessList(config.lists) : null;
  const limiterForRoute = config.routes.map((route) => {
    const made = new Map();
    return (/** @type {number[]} */ indexes) => {
      const id = indexes.join(",");
      let limiter = made.get(id);
      if (limiter === undefined) {
        limiter = factory(indexes.map((i) => route.rules[i]), { route });
        made.set(id, limiter);
      }
      return limiter;
    };
  });
  // Every store group's limiter now, as the gateway builds them at start-up: what the host refuses
  // (key tables beyond its memory) is a ConfigError naming the field before any line is read.
  for (const route of config.routes) for (const group of route.storeGroups) limiterForRoute[route.index](/** @type {number[]} */ ([...group]));
  // One request object, pointed at each record in turn (requests are decided one after another).
  const request = /** @type {any} */ (new LogRequest(/** @type {LogRecord} */ ({})));
  const env = Object.freeze({});
  const ctx = Object.freeze({ waitUntil() {}, passThroughOnException() {} });

  /**
   * decide replays one request at its logged time and reports each rule's verdict to `sink`.
   * @param {LogRecord} record
   * @param {VerdictSink} sink
   * @returns {Promise<{ outcome: RequestOutcome, blocked: boolean }>}
   */
  async function decideRecord(record, sink) {
    const canonical = requestPath(record.uri);
    if (canonical.problem !== undefined) return { outcome: "bad_path", blocked: false };
    const matched = match(/** @type {string} */ (canonical.path));
    if (matched === null) return { outcome: "no_route", blocked: false };
    const { route, remainder } = matched;
    if (!route.methods.includes(/** @type {any} */ (record.method))) return { outcome: "method", blocked: false };
    request.record = record;
    const listed = lists === null ? null : lists.match(request);
    if (listed?.list === "deny") return { outcome: "deny_list", blocked: false };
    const query = record.uri.indexOf("?");
    if (upstreamTarget(route.upstream, remainder, query < 0 ? "" : record.uri.slice(query)).problem !== undefined) return { outcome: "bad_path", blocked: false };
    if (listed?.list === "allow") return { outcome: "allow_list", blocked: false };
    now = record.timeMs;
    const verdict = await decide(route, limiterForRoute[route.index], request, env, ctx);
    const indexes = ruleIndexes[route.index];
    for (let i = 0; i < verdict.verdicts.length; i++) {
      const { event, key } = verdict.verdicts[i];
      if (indexes[i] < 0 || event === "bypassed") continue;
      sink(indexes[i], key ?? "", event, 1);
    }
    return { outcome: "checked", blocked: verdict.blocked };
  }

  return { kind: /** @type {const} */ ("config"), rules, lockoutRules, decide: decideRecord };
}
