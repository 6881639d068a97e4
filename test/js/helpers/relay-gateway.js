// The gateway in workerd (Miniflare) in front of a Node HTTP upstream, with two routes on the streamed
// relay: /masked (a text body the gateway masks: the admin token is a secret) and /never (maskBody
// "never"), each with bodyTimeoutMs `boundMs`. What the relay tests share (gateway-slow-reader,
// gateway-response-hangup): the JSON log lines workerd writes, and the admin metrics by route.
import { createServer } from "node:http";
import { Miniflare } from "miniflare";

import { parseExposition, sample } from "./prometheus.js";
import { configModule, workerOptions } from "./worker.js";

/**
 * startRelayGateway starts `handler` as the upstream and the gateway before it. Resolves to
 * { gateway, logLines, scrape(route, name, labels), close() }.
 * @param {{ handler: import("node:http").RequestListener, boundMs: number, adminToken: string }} options
 */
export async function startRelayGateway({ handler, boundMs, adminToken }) {
  const server = createServer(handler);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const rules = (name) => [{ name, algorithm: "fixed-window", limit: 1000, windowSec: 60, key: "ip" }];
  const config = {
    routes: [
      { prefix: "/masked", methods: ["GET"], upstream: { url: `${origin}/masked`, bodyTimeoutMs: boundMs }, rules: rules("masked") },
      { prefix: "/never", methods: ["GET"], upstream: { url: `${origin}/never`, bodyTimeoutMs: boundMs, maskBody: "never" }, rules: rules("never") },
    ],
    admin: { path: "/admin/metrics", tokenSecret: "ADMIN_TOKEN" },
  };
  const worker = await workerOptions({
    name: "gw",
    entry: "gateway",
    bindings: { ADMIN_TOKEN: adminToken, TEST_LIMITER_NOW: String(Date.UTC(2030, 0, 1, 0, 0, 10)) },
    extraModules: [configModule(config)],
  });
  const logLines = [];
  let pending = "";
  const mf = new Miniflare({
    workers: [worker],
    handleRuntimeStdio(out, err) {
      err.resume();
      out.on("data", (chunk) => {
        pending += chunk;
        const lines = pending.split("\n");
        pending = lines.pop();
        for (const line of lines) if (line.includes("{")) logLines.push(line);
      });
    },
  });
  const gateway = await mf.getWorker("gw");
  return {
    gateway,
    logLines,
    async scrape(route, name, labels = {}) {
      const response = await gateway.fetch("https://gw.test/admin/metrics", { headers: { authorization: `Bearer ${adminToken}` } });
      return sample(parseExposition(await response.text()), name, { route, ...labels }) ?? 0;
    },
    async close() {
      await mf.dispose();
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
