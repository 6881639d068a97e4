// Proxying WebSocket upgrades to a route's upstream with connection and message limits. The client's
// upgrade is counted (connections: 429 before upgrading when the client already holds `max`), then the
// upstream is asked to upgrade, and frames are relayed through a WebSocketPair: the client's messages
// pass the route's size bound (maxMessageBytes: a larger one closes both sides with 1009) and message
// limits on the way, and the connection's slot is released when either side closes.
//
// Control frames (ping, pong, close) never reach a Worker: workerd answers a ping itself and the
// WebSocket API has no event for one, so the gateway can neither count nor bound them, and they are
// not relayed to the upstream either (the upstream sees only the pair's own). What they cost is the
// runtime's, as on any Worker that accepts a WebSocket.
import { holdUntilDone } from "../src/features/concurrency/lease.js";
import { relayWebSocket } from "../src/features/websocket/relay.js";
import { GatewayError, errorResponse } from "./errors.js";
import { upstreamRequestHeaders } from "./forwarding.js";
import { buildWebSocketLimits } from "./websocket-config.js";

/** isWebSocketUpgrade reports whether `request` asks to upgrade to a WebSocket. @param {Request} request @returns {boolean} */
export function isWebSocketUpgrade(request) {
  return request.method === "GET" && request.headers.get("upgrade")?.toLowerCase() === "websocket";
}

const encoder = new TextEncoder();

/**
 * The size of a message in bytes (a text message's in UTF-8), computed only as far as `max` needs:
 * a string of n UTF-16 units holds between n and 3n UTF-8 bytes.
 * @param {string | ArrayBuffer} data
 * @param {number} max
 * @returns {boolean} whether it is over `max`
 */
export function overSize(data, max) {
  if (typeof data !== "string") return data.byteLength > max;
  if (data.length > max) return true;
  if (data.length * 3 <= max) return false;
  return encoder.encode(data).byteLength > max;
}

/** What happened to one client message: relayed, dropped by a message limit, or refused as too big (the socket closed). */
/** @typedef {"admitted" | "rate_limited" | "too_large"} MessageOutcome */

/**
 * createWebSocketProxy builds the limits of `route.websocket` (keyOf(parts) makes a key function) and
 * returns proxy({ request, targetUrl, env, secret, ctx, headers }) -> { response, upstreamStatus,
 * failure, refused }. `headers` are added to the 101 (the rate-limit fields); `onMessage(outcome)` is
 * told what happened to each client message (for the metrics). Never rejects.
 * @param {import("./config.js").GatewayRoute & { websocket: import("./websocket-config.js").WebSocketLimitsConfig }} route
 * @param {(parts: readonly string[]) => any} keyOf
 * @param {{ onMessage?: (outcome: MessageOutcome) => void }} [observe]
 */
export function createWebSocketProxy(route, keyOf, { onMessage = () => {} } = {}) {
  const path = `routes[${route.index}].websocket`;
  const { connections, messages } = buildWebSocketLimits(route.websocket, path, keyOf);
  const { maxMessageBytes } = route.websocket;
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
    const hooks = {
      /** @param {string | ArrayBuffer} data @param {{ send: Function, close: Function }} client */
      onClientMessage(data, client) {
        if (overSize(data, maxMessageBytes)) {
          onMessage("too_large");
          client.close(1009, "message too big");
          return false;
        }
        const admitted = gate === null || gate.admit(/** @type {import("../src/features/websocket/message-limit.js").MessageSocket} */ (client));
        onMessage(admitted ? "admitted" : "rate_limited");
        return admitted;
      },
    };
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
