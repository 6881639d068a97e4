// The shipped gateway as bench/gateway-cpu/gateway.js runs it, but logging as shipped: one JSON line
// per request through console.log (workerd's, which the bench reads and drops).
import { env } from "cloudflare:workers";
import config from "bench:gateway-config";
import { createGateway, resolveConfig } from "../../worker/gateway/gateway.js";

const gateway = createGateway(resolveConfig(config, env));

export default {
  fetch(request, env, ctx) {
    return gateway.fetch(request, env, ctx);
  },
};
