// The store bindings each route needs in env: the Durable Object namespace or KV namespace of every
// active rule (rate-limit or lockout) and WebSocket connection limit counted outside the isolate.
//
// env is only known per request, so a missing binding cannot fail start-up; it fails the route at
// first use instead (gateway.js answers 500 sluice_misconfigured, counts it and logs this problem).
// Falling back to the isolate's memory for it would quietly turn an exact or global limit into one
// per isolate: N isolates would admit N times the limit. A binding that is present but fails is an
// outage, not a misconfiguration: the store's fallback chain handles that, as configured.

import { DEFAULT_BINDINGS } from "../src/stores/registry.js";
import { fieldPath } from "./validate.js";

/** @import { GatewayConfig, GatewayRoute } from "./config.js" */

/**
 * One binding a route needs: `binding` is its name in env, `field` the configuration field that asks
 * for it, `source` where its name comes from (a store setting, or the host's default).
 * @typedef {{ binding: string; field: string; store: "durable" | "kv"; source: string }} BindingNeed
 */

const DECLARATION = Object.freeze({ durable: "[[durable_objects.bindings]]", kv: "[[kv_namespaces]]" });

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
      if (rule.mode === "bypass" || (rule.store !== "durable" && rule.store !== "kv")) return;
      needs.push({ ...storeBinding(stores, rule.store), store: rule.store, field: fieldPath(fieldPath(rulesPath, i), "store") });
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
    if (value !== undefined && value !== null) continue;
    problems +=
      `${problems === "" ? "" : "; "}${field}: "${store}" needs the binding ${binding} (${source}), which env does not have: ` +
      `declare it in wrangler.toml (${DECLARATION[store]}) or choose another store`;
  }
  return problems;
}
