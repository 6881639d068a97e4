// The gateway's upstream call alone (worker/gateway/proxy.js, as the gateway calls it for the bench's
// /api route): the credential added, one deadline for the head and the body read whole, the body
// masked with every secret, the headers filtered and masked. No routing, no rules, no log line.
import { env } from "cloudflare:workers";
import config from "bench:gateway-config";
import { resolveConfig } from "../../worker/gateway/gateway.js";
import { proxyRequest } from "../../worker/gateway/proxy.js";
import { secretMasker } from "../../worker/gateway/redact.js";

const route = resolveConfig(config, env).routes.find((r) => r.prefix === "/api");
const mask = secretMasker([env.UPSTREAM_TOKEN, env.SLUICE_ADMIN_TOKEN]);

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const remainder = url.pathname.slice(route.prefix.length);
    const result = await proxyRequest({
      method: request.method,
      headers: request.headers,
      body: undefined,
      targetUrl: `${route.upstream.url}${remainder}${url.search}`,
      upstream: route.upstream,
      env,
      secret: env.UPSTREAM_TOKEN,
      mask,
      now: Date.now,
    });
    return result.response;
  },
};
