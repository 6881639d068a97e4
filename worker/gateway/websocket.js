// Proxying WebSocket upgrades to a route's upstream with connection and message limits. The client's
// upgrade is counted (connections: 429 before upgrading when the client already holds `max`), then the
// upstream is asked to upgrade, and frames are relayed through a WebSocketPair: the client's messages
// pass the route's message limits on the way, and the connection's slot is released when either side
// closes.
import { holdUntilDone } from "../src/features/concurrency/lease.js";
import { relayWebSocket } from "../src/features/websocket/relay.js";
import { GatewayError, errorResponse } from "./errors.js";
import { upstreamRequestHeaders } from "./forwarding.js";
import { buildWebSocketLimits } from "./websocket-config.js";

/** isWebSocketUpgrade reports whether `request` asks to upgrade to a WebSocket. */
export function isWebSocketUpgrade(request) {
  return request.method === "GET" && request.headers.get("upgrade")?.toLowerCase() === "websocket";
}

/**
 * createWebSocketProxy builds the limits of `route.websocket` (keyOf(parts) makes a key function) and
 * returns proxy({ request, targetUrl, env, secret, ctx, headers }) -> { response, upstreamStatus,
 * failure, refused }. `headers` are added to the 101 (the rate-limit fields). Never rejects.
 * @param {import("./config.js").GatewayRoute & { websocket: import("./websocket-config.js").WebSocketLimitsConfig }} route
 * @param {(parts: readonly string[]) => any} keyOf
 */
export function createWebSocketProxy(route, keyOf) {
  const path = `routes[${route.index}].websocket`;
  const { connections, messages } = buildWebSocketLimits(route.websocket, path, keyOf);
  const { upstream } = route;

  /**
   * @param {Request} request
   * @param {string} targetUrl
   * @param {any} env
   * @param {string | null} secret
   * @returns {Promise<Response | null>}
   */
  async function upgradeUpstream(request, targetUrl, env, secret) {
    const headers = upstreamRequestHeaders(request.headers, upstream, secret);
    // Hop-by-hop headers are never forwarded, but this one is the request: ask the upstream to upgrade.
    headers.set("upgrade", "websocket");
    const fetcher = upstream.service === null ? globalThis : env[upstream.service];
    try {
      return await fetcher.fetch(targetUrl, { method: "GET", headers, redirect: "manual" });
    } catch {
      return null;
    }
  }

  /**
   * @param {{ request: Request; targetUrl: string; env: any; secret: string | null; ctx: any; headers?: [string, string][] }} call
   * @returns {Promise<{ response: Response; upstreamStatus: number | null; failure: "unreachable" | null; refused: boolean }>}
   */
  return async function proxy({ request, targetUrl, env, secret, ctx, headers = [] }) {
    /** @type {import("../src/features/concurrency/lease.js").Lease | null} */
    let lease = null;
    if (connections !== null) {
      const acquisition = await connections.acquire([request, env, ctx], env, ctx);
      if (!acquisition.allowed) {
        return { response: connections.limitedResponse(acquisition.decision), upstreamStatus: null, failure: null, refused: true };
      }
      lease = acquisition.lease ?? null;
    }
    const upstreamResponse = await upgradeUpstream(request, targetUrl, env, secret);
    if (upstreamResponse === null || upstreamResponse.status !== 101 || !upstreamResponse.webSocket) {
      if (lease !== null) lease.release();
      if (upstreamResponse !== null) await upstreamResponse.body?.cancel();
      return {
        response: errorResponse(GatewayError.UPSTREAM_UNREACHABLE),
        upstreamStatus: upstreamResponse?.status ?? null,
        failure: "unreachable",
        refused: false,
      };
    }
    const gate = messages === null ? null : messages.connection(lease?.key ?? `${route.index}`);
    const hooks = gate === null ? {} : { onClientMessage: (data, client) => gate.admit(client) };
    const responseHeaders = new Headers(headers);
    let response;
    if (lease !== null) {
      response = holdUntilDone(new Response(null, { status: 101, headers: responseHeaders, webSocket: upstreamResponse.webSocket }), lease, hooks);
    } else {
      response = new Response(null, { status: 101, headers: responseHeaders, webSocket: relayWebSocket(upstreamResponse.webSocket, hooks) });
    }
    return { response, upstreamStatus: 101, failure: null, refused: false };
  };
}
