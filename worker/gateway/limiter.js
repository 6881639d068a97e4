// The gateway's limiters are sluice's own (createLimiter, limiter.js): one per store group of a route's
// rules, on the host's stores (memory, durable and kv behind the fallback chain) and its clock.
//
// Key parts map onto the host's key helpers:
//   ip             ip(config.ip): cf-connecting-ip, IPv6 by /64, x-forwarded-for only as far as the
//                  configuration's `ip.trustForwardedFor` believes it (as the library's ip() does)
//   user           the bearer token as the user id, else the client's IP (the token is not verified:
//                  pair such a rule with an ip rule, or put the gateway behind your authentication)
//   route          the configured route prefix, never the request path: varying the path cannot
//                  multiply a client's budget
//   apiKey:<name>  the value of request header <name>
//   cf:<field>     a field of request.cf Cloudflare sets (country, asn, colo, botScore, ja3, ja4, ...)
//   cookie:<name>, query:<name>   a cookie's or query parameter's value (sent twice: one shared key)
//   jwt:<claim>    a claim of the bearer token, verified with the configuration's `jwt` settings
//                  (http/jwt.js); no valid token: the part is "unknown", shared by all such requests
// Several parts are composed into one key ("ip:192.0.2.1|route:/data").

import { nowMs } from "../src/engine/clock.js";
import { SluiceConfigError } from "../src/engine/errors.js";
import { apiKey, bearerToken, compose, firstOf, ip, route as fixedRoute, user } from "../src/http/keys.js";
import { createGatewayLimiter } from "../src/engine/limiter.js";
import { cf, cookie, query } from "../src/http/characteristics.js";
import { verifiedClaim } from "../src/http/jwt.js";
import { accuracyProbe } from "../src/features/accuracy/probe.js";
import { overrideList } from "../src/features/overrides/overrides.js";
import { ConfigError, fieldPath } from "./validate.js";

/** @import { GatewayRoute, GatewayRule } from "./config.js" */
/** @import { KeyFunction } from "../src/http/keys.js" */

const RULE_FIELD = /^rules\[(\d+)\]\.(.+)$/;

// The verified-claim key functions, one per claim and `jwt` settings (their caches of keys and tokens).
/** @type {WeakMap<object, Map<string, import("../src/http/keys.js").KeyHelper>>} */
const claimKeys = new WeakMap();

/**
 * keyParts returns keyPart(part, route), the key function of one validated key part of `route` (the
 * rules', lockout's client and the WebSocket limits'), where "ip" is ip(`ip`): the configuration's
 * `ip` block, and `jwt` the configuration's jwt settings (validated), needed by jwt:<claim> parts.
 * @param {{ ip?: import("../src/http/keys.js").IpOptions, jwt?: import("../src/http/jwt.js").JwtOptions | null }} [settings]
 */
export function keyParts({ ip: ipOptions = {}, jwt = null } = {}) {
  const clientIp = ip(ipOptions);
  const userOrIp = firstOf(user(bearerToken), clientIp);
  /** @param {string} part @param {{ prefix: string }} route */
  return function keyPart(part, route) {
    if (part === "ip") return clientIp;
    if (part === "user") return userOrIp;
    if (part === "route") return fixedRoute(route.prefix);
    const colon = part.indexOf(":");
    const [kind, name] = [part.slice(0, colon), part.slice(colon + 1)];
    if (kind === "cf") return cf(/** @type {any} */ (name));
    if (kind === "cookie") return cookie(name);
    if (kind === "query") return query(name);
    if (kind === "jwt") {
      if (jwt === null) throw new ConfigError("jwt", `is needed by the key part ${JSON.stringify(part)}: how tokens are verified`);
      let byClaim = claimKeys.get(jwt);
      if (byClaim === undefined) claimKeys.set(jwt, (byClaim = new Map()));
      let helper = byClaim.get(name);
      if (helper === undefined) byClaim.set(name, (helper = verifiedClaim(name, jwt)));
      return helper;
    }
    return apiKey(part.slice("apiKey:".length));
  };
}

// A refusal of the host's, named where the configuration says it: a rule's field under its route, a
// store option under `stores`.
/** @param {SluiceConfigError} error @param {readonly GatewayRule[]} rules @param {GatewayRoute} route @param {string} store @returns {ConfigError} */
function configError(error, rules, route, store) {
  const ruleField = RULE_FIELD.exec(error.field);
  if (ruleField !== null) {
    const index = route.rules.indexOf(rules[Number(ruleField[1])]);
    return new ConfigError(`routes[${route.index}].rules[${index}].${ruleField[2]}`, error.problem);
  }
  return new ConfigError(fieldPath(fieldPath("stores", store), error.field), error.problem);
}

/** @typedef {{ route: string, store: string, probe: import("../src/features/accuracy/probe.js").AccuracyProbe }} AccuracyProbeEntry */

/**
 * createLimiterFactory returns the gateway's limiterFactory(rules, { route }) on sluice's host:
 * `stores` are the configuration's store options ({ durable, kv }), `clock` the time in milliseconds
 * (default: the wall clock, clock.js), `ip` the configuration's `ip` block (how the `ip` key part finds
 * the client; pass config.ip). Each limiter is a createLimiter() of the given rules, which
 * must share one store; rules are registered by their stable id, so limiters made for different
 * subsets of a route's rules share each rule's counts. Throws ConfigError naming the field for what
 * the host refuses when a limiter is built (e.g. key tables beyond the isolate's memory).
 * `accuracy` ({ sample, binding }, or null) gives every memory and KV limiter a probe measuring it
 * against exact counting (features/accuracy/probe.js); each probe is pushed to `probes`.
 * @param {{ stores?: import("./config.js").StoresInput; clock?: () => number; ip?: import("../src/http/keys.js").IpOptions; accuracy?: { sample: number; binding: string } | null; probes?: AccuracyProbeEntry[]; jwt?: import("../src/http/jwt.js").JwtOptions | null }} [options]
 * @returns {import("./gateway.js").LimiterFactory}
 */
export function createLimiterFactory({ stores = {}, clock = nowMs, ip: ipOptions = {}, accuracy = null, probes = [], jwt = null } = {}) {
  const keyPart = keyParts({ ip: ipOptions, jwt });
  // Rules of one route with the same key share one key function, so it runs once per request.
  const keyFunctions = new Map();
  /** @param {GatewayRule} rule @param {GatewayRoute} route @returns {KeyFunction} */
  function keyFunction(rule, route) {
    const id = `${route.index}\u0000${rule.key.join("\u0000")}`;
    let key = keyFunctions.get(id);
    if (key === undefined) {
      const parts = rule.key.map((/** @type {string} */ part) => keyPart(part, route));
      key = parts.length === 1 ? parts[0] : compose(...parts);
      keyFunctions.set(id, key);
    }
    return key;
  }

  // One probe per route and store: `probes` collects them for the gateway's /metrics.
  /** @param {GatewayRoute} route @param {string} store */
  function probeFor(route, store) {
    const probe = accuracyProbe(/** @type {any} */ (accuracy));
    probes.push({ route: route.prefix, store, probe });
    return probe;
  }

  return function limiterFactory(rules, { route }) {
    const { store, lease } = rules[0];
    if (rules.some((rule) => rule.store !== store || JSON.stringify(rule.lease) !== JSON.stringify(lease))) {
      throw new TypeError(`createLimiterFactory: the rules of one limiter share one store (and lease); ${route.prefix} mixes them`);
    }
    const options = {
      rules: rules.map((rule) => ({
        name: rule.name,
        algorithm: rule.algorithm,
        limit: rule.limit,
        windowMs: rule.windowMs,
        ...(rule.burst > 0 ? { burst: rule.burst } : {}),
        ...(rule.blockMs !== undefined ? { blockMs: rule.blockMs } : {}),
        ...(rule.overrides !== undefined ? { overrides: overrideList(rule.overrides) } : {}),
        keyCapacity: rule.keyCapacity,
        key: keyFunction(rule, route),
      })),
      clock,
      ...(store === "memory" ? {} : { store, ...stores[store] }),
      // A rule's own lease overrides the store's (false: none).
      ...(lease === undefined ? {} : { lease }),
      // Approximate stores are measured against exact counting when the configuration asks (accuracy).
      ...(accuracy !== null && (store === "memory" || store === "kv") ? { accuracy: probeFor(route, store) } : {}),
    };
    try {
      return createGatewayLimiter(/** @type {import("../src/engine/limiter.js").LimiterOptions} */ (/** @type {unknown} */ (options)));
    } catch (error) {
      if (error instanceof SluiceConfigError) throw configError(error, rules, route, store);
      throw error;
    }
  };
}
