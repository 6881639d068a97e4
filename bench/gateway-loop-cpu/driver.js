// The Worker of bench/gateway-loop-cpu.js: one request runs `n` requests through the shipped gateway
// (worker/gateway), the bare Worker (bench/gateway-cpu/bare.js) or the least Worker keeping the
// gateway's guarantees (bench/gateway-cpu/least.js), one after the other, in
// this isolate, so that what is measured is their JavaScript with its code and data warm, without
// the HTTP exchange and the other isolates each top-level request also costs.
import { env as startEnv } from "cloudflare:workers";
import config from "bench:gateway-config";
import { createGateway, resolveConfig } from "../../worker/gateway/gateway.js";
import bare from "../gateway-cpu/bare.js";
import least from "../gateway-cpu/least.js";
import { HEADERS } from "../gateway-cpu/headers.js";

const gateway = createGateway(resolveConfig(config, startEnv), { log: () => {} });

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const who = url.searchParams.get("who");
    const handler = who === "gateway" ? gateway : who === "least" ? least : bare;
    const path = /** @type {string} */ (url.searchParams.get("path"));
    const n = Number(url.searchParams.get("n"));
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      const response = await handler.fetch(new Request(`https://gateway.bench${path}`, { headers: HEADERS }), env, ctx);
      bytes += (await response.arrayBuffer()).byteLength;
    }
    return new Response(String(bytes));
  },
};
