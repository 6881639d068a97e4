// The shipped gateway (worker/gateway/gateway.js) as the bench runs it: the configuration comes from
// the bench (bench-config.js beside the bundle), the upstream is the UPSTREAM service binding.
import { env } from "cloudflare:workers";
import config from "bench:gateway-config";
import { createGateway, resolveConfig } from "../../worker/gateway/gateway.js";

const gateway = createGateway(resolveConfig(config, env), { log: () => {} });

export default {
  fetch(request, env, ctx) {
    return gateway.fetch(request, env, ctx);
  },
};
