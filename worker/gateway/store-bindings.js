// The store bindings each route needs in env: the Durable Object namespace or KV namespace of every
// active rule (rate-limit or lockout) and WebSocket connection limit counted outside the isolate, and
// the Redis REST URL and token (secrets) of every redis rule.
//
// When the gateway is given the start-up env (createGateway's `env` option; the shipped Worker passes
// it), a missing binding or secret fails start-up, naming the field (deploymentProblem below). Without
// it, it fails the route at first use instead (gateway.js answers 500 sluice_misconfigured, counts it
// and logs this problem).
// Falling back to the isolate's memory for it would quietly turn an exact or global limit into one
// per isolate: N isolates would admit N times the limit. A binding that is present but fails is an
// outage, not a misconfiguration: the store's fallback chain handles that, as configured.

import { DEFAULT_BINDINGS, DEFAULT_REDIS_BINDINGS } from "../src/stores/registry.js";
import { fieldPath } from "./validate.js";

/** @import { GatewayConfig, GatewayRoute } from "./config.js" */

/**
 * One binding a route needs: `binding` is its name in env, `field` the configuration field that asks
 * for it, `source` where its name comes from (a store setting, or the host's default).
 * @typedef {{ binding: string; field: string; store: "durable" | "kv" | "redis"; source: string }} BindingNeed
 */

const DECLARATION = Object.freeze({ durable: "[[durable_objects.bindings]]", kv: "[[kv_namespaces]]", redis: "a secret: wrangler secret put" });

/**
 * The binding name of `store` in the configuration's store settings, and the field it is read from.
 * @param {GatewayConfig["stores"]} stores
 * @param {"durable" | "kv"} store
 */
function storeBinding(stores, store) {
  const configured = /** @type {Record<string, string> | undefined} */ (stores[store]?.bindings)?.[store];
  return { binding: configured ?? DEFAULT_BINDINGS[store], source: `stores.${store}.bindings.${store}` };
}

/**
 * routeBindingNeeds lists, per route (by index), the store bindings its active rules and WebSocket
 * connection limit need, in rule order.
 * @param {GatewayConfig} config
 * @returns {BindingNeed[][]}
 */
export function routeBindingNeeds({ routes, stores }) {
  return routes.map((route) => {
    /** @type {BindingNeed[]} */
    const needs = [];
    const rulesPath = fieldPath(fieldPath("routes", route.index), "rules");
    route.rules.forEach((rule, i) => {
      if (rule.mode === "bypass") return;
      const field = fieldPath(fieldPath(rulesPath, i), "store");
      if (rule.store === "redis") {
        for (const name of ["redisUrl", "redisToken"]) {
          const configured = /** @type {Record<string, string> | undefined} */ (stores.redis?.bindings)?.[name];
          needs.push({ binding: configured ?? DEFAULT_REDIS_BINDINGS[/** @type {"redisUrl" | "redisToken"} */ (name)], source: `stores.redis.bindings.${name}`, store: "redis", field });
        }
        return;
      }
      if (rule.store !== "durable" && rule.store !== "kv") return;
      needs.push({ ...storeBinding(stores, rule.store), store: rule.store, field });
    });
    if (route.websocket?.connections?.store === "durable") {
      // The gateway's connection limits use the host's default binding (concurrency/options.js).
      needs.push({
        binding: DEFAULT_BINDINGS.durable,
        source: "the default binding of a connection limit",
        store: "durable",
        field: fieldPath(fieldPath(fieldPath(fieldPath("routes", route.index), "websocket"), "connections"), "store"),
      });
    }
    return needs;
  });
}

/**
 * missingBindings describes the needs `env` does not meet, one problem per need, or "" when every
 * binding is there. Names only bindings and fields, never a value from env.
 * @param {readonly BindingNeed[]} needs
 * @param {any} env
 * @returns {string}
 */
export function missingBindings(needs, env) {
  let problems = "";
  for (const { binding, field, store, source } of needs) {
    const value = env?.[binding];
    if (store === "redis" ? typeof value === "string" && value !== "" : value !== undefined && value !== null) continue;
    problems +=
      `${problems === "" ? "" : "; "}${field}: "${store}" needs the binding ${binding} (${source}), which env does not have: ` +
      `declare it in wrangler.toml (${DECLARATION[store]}) or choose another store`;
  }
  return problems;
}

/**
 * deploymentProblem is the first thing `env` lacks that the configuration needs, as { field, problem }
 * (field: where the configuration asks for it), or null: each route's upstream secret
 * (`upstream.auth.secret`) and service binding (`upstream.service`), then its store bindings and
 * secrets (routeBindingNeeds). Names only bindings and fields, never a value from env.
 * @param {GatewayConfig} config
 * @param {BindingNeed[][]} needs routeBindingNeeds(config)
 * @param {any} env
 * @returns {{ field: string; problem: string } | null}
 */
export function deploymentProblem(config, needs, env) {
  for (const route of config.routes) {
    const upstreamPath = fieldPath(fieldPath("routes", route.index), "upstream");
    const { auth, service } = route.upstream;
    if (auth !== null && (typeof env?.[auth.secret] !== "string" || env[auth.secret] === "")) {
      return { field: fieldPath(fieldPath(upstreamPath, "auth"), "secret"), problem: `names ${auth.secret}, which env does not have (or is empty): set it with wrangler secret put` };
    }
    if (service !== null && typeof env?.[service]?.fetch !== "function") {
      return { field: fieldPath(upstreamPath, "service"), problem: `names ${service}, which env does not have as a service binding: declare it in wrangler.toml ([[services]])` };
    }
    for (const need of needs[route.index]) {
      const problem = missingBindings([need], env);
      if (problem !== "") return { field: need.field, problem: problem.slice(need.field.length + 2) };
    }
  }
  return null;
}
