// The Worker of this repository (wrangler.toml's main): sluice as a gateway in front of an API,
// configured by gateway.config.json, or by SLUICE_CONFIG when [vars] sets it (README.md, "The gateway").
// The gateway is built at module scope, so an invalid configuration stops the Worker at start-up
// (and so fails a deployment), naming the field. As shipped, it protects the demo upstream
// (demo/upstream.js) with the demo's tiers; with ENV=dev (`npm start -- --var ENV:dev`) every limit
// is bypassed and responses say so.
import { env } from "cloudflare:workers";
import bundled from "../gateway.config.json";
import { createGateway, resolveConfig } from "./gateway/gateway.js";

// wrangler.toml binds this class as SLUICE_DO: the Durable Object store's exact counters.
export { SluiceDurableObject } from "./src/stores/durable-object.js";
// And this one as SLUICE_DASHBOARD: where every isolate's counters add up for the dashboard.
export { SluiceDashboardObject } from "./gateway/dashboard/object.js";
// And this one as SLUICE_OVERRIDES: the live table of a rule's liveOverrides.
export { SluiceOverridesObject } from "./src/features/overrides/table-object.js";
// And this entrypoint as DEMO_UPSTREAM, the demo's upstream (remove both when you proxy a real API).
export { DemoUpstream } from "./demo/upstream.js";

// With env, a route whose upstream secret or store binding is missing stops the Worker here too.
const gateway = createGateway(resolveConfig(bundled, env), { env });

export default {
  /** @param {Request} request @param {object} env @param {ExecutionContext} ctx @returns {Promise<Response>} */
  fetch(request, env, ctx) {
    return gateway.fetch(request, env, ctx);
  },
};
