// A route's `websocket` block in the gateway configuration: the shipped one validates, and every
// mistake is a ConfigError naming its field, at start-up.
import assert from "node:assert/strict";
import { test } from "node:test";


const { ConfigError, validateConfig } = await import("../../worker/gateway/config.js");

function withWebSocket(websocket, methods = ["GET"]) {
  return {
    routes: [
      {
        prefix: "/ws",
        methods,
        upstream: { url: "https://api.example.com/ws" },
        rules: [{ name: "ws", algorithm: "fixed-window", limit: 10, windowSec: 60, key: "ip" }],
        websocket,
      },
    ],
  };
}

const GOOD = { connections: { max: 3, key: "user", leaseSec: 60, store: "durable" }, messages: { perConnection: { limit: 20, windowSec: 10 }, onLimited: "close" } };

test("a valid websocket block is kept as plain data", () => {
  const route = validateConfig(withWebSocket(GOOD)).routes[0];
  assert.equal(route.websocket.connections.max, 3);
  assert.deepEqual(route.websocket.connections.key, ["user"]);
  assert.equal(route.websocket.messages.perConnection.limit, 20);
});

test("every mistake names its field", () => {
  const cases = [
    [{ ...GOOD, extra: 1 }, "routes[0].websocket.extra"],
    [{}, "routes[0].websocket.connections"],
    [{ connections: { key: "ip" } }, "routes[0].websocket.connections.max"],
    [{ connections: { max: 3 } }, "routes[0].websocket.connections.key"],
    [{ connections: { max: 0, key: "ip" } }, "routes[0].websocket.connections.max"],
    [{ connections: { max: 3, key: "nobody" } }, "routes[0].websocket.connections.key"],
    [{ connections: { max: 3, key: "ip", store: "kv" } }, "routes[0].websocket.connections.store"],
    [{ connections: { max: 3, key: "ip", leaseSec: 0 } }, "routes[0].websocket.connections.leaseSec"],
    [{ messages: { perConnection: { limit: 0, windowSec: 10 } } }, "routes[0].websocket.messages.perConnection.limit"],
    [{ messages: { perConnection: { limit: 5, windowSec: 10 }, closeCode: 1000 } }, "routes[0].websocket.messages.closeCode"],
    [{ messages: { perConnection: { limit: 5, windowSec: 10 }, every: 2 } }, "routes[0].websocket.messages.every"],
  ];
  for (const [websocket, field] of cases) {
    assert.throws(() => validateConfig(withWebSocket(websocket)), (error) => error instanceof ConfigError && error.path === field, `${JSON.stringify(websocket)} -> ${field}`);
  }
  assert.throws(() => validateConfig(withWebSocket(GOOD, ["POST"])), (error) => error instanceof ConfigError && error.path === "routes[0].websocket.connections");
});
