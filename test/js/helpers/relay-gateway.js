// The gateway in workerd (Miniflare) in front of a Node HTTP upstream, by default with two routes on
// the streamed relay: /masked (a text body the gateway masks: the admin token is a secret) and /never
// (maskBody "never"), each with bodyTimeoutMs `boundMs`; or the routes a test names. What the relay
// tests share (gateway-slow-reader, gateway-response-hangup, gateway-unmasked-relay,
// gateway-body-deadline): the JSON log lines workerd writes, the admin metrics by route, and the
// client's reading of a whole body.
import { createServer } from "node:http";
import { Miniflare } from "miniflare";

import { parseExposition, sample } from "./prometheus.js";
import { configModule, workerOptions } from "./worker.js";

/** A route of `prefix` to `origin` + `prefix`, with `upstream`'s fields and one generous rule named after it. @param {string} origin @param {string} prefix @param {object} [upstream] */
export function relayRoute(origin, prefix, upstream = {}) {
  return { prefix, methods: ["GET"], upstream: { url: `${origin}${prefix}`, ...upstream }, rules: [{ name: prefix.slice(1), algorithm: "fixed-window", limit: 1000, windowSec: 60, key: "ip" }] };
}

/**
 * startRelayGateway starts `handler` as the upstream and the gateway before it, with `routes(origin)`
 * when given (else /masked and /never under `boundMs`). Resolves to
 * { gateway, logLines, scrape(route, name, labels), close() }.
 * @param {{ handler: import("node:http").RequestListener, boundMs?: number, adminToken: string, routes?: (origin: string) => object[] }} options
 */
export async function startRelayGateway({ handler, boundMs, adminToken, routes }) {
  const server = createServer(handler);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const config = {
    routes: routes?.(origin) ?? [relayRoute(origin, "/masked", { bodyTimeoutMs: boundMs }), relayRoute(origin, "/never", { bodyTimeoutMs: boundMs, maskBody: "never" })],
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

/**
 * drainResponse reads `response`'s body to its end as the client would. Resolves to { bytes, error }:
 * everything that arrived, and the error the body ended in (null when it ended cleanly).
 * @param {Response} response
 */
export async function drainResponse(response) {
  const reader = response.body.getReader();
  const chunks = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes: Buffer.concat(chunks), error: null };
      chunks.push(Buffer.from(value));
    }
  } catch (error) {
    return { bytes: Buffer.concat(chunks), error };
  }
}
