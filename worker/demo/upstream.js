// The demo's upstream: a stand-in for the API the gateway protects (gateway.config.json), so that
// `npm start` works offline. It is this Worker's own entrypoint DemoUpstream, reached only through the
// service binding DEMO_UPSTREAM (wrangler.toml): no URL on the Internet leads to it. Like a real API
// behind the gateway, it answers only requests carrying the gateway's credential (the UPSTREAM_TOKEN
// secret, in x-upstream-token), and knows nothing of rate limits.
import { WorkerEntrypoint } from "cloudflare:workers";
import { Hono } from "hono";

import { DEMO_PASSWORD } from "./password.js";
import { tokensEqual } from "../gateway/admin.js";
import { bearerToken } from "../src/http/keys.js";

/** @type {Hono<{ Bindings: { UPSTREAM_TOKEN?: string } }>} */
const app = new Hono();

app.use(async (c, next) => {
  const expected = c.env.UPSTREAM_TOKEN;
  const presented = c.req.header("x-upstream-token");
  if (typeof expected !== "string" || expected === "" || presented === undefined || !(await tokensEqual(presented, expected))) {
    return c.json({ error: "not called through the gateway" }, 401);
  }
  return next();
});

// Every account's password is the same here (password.js). Like a careful real API it answers
// 401 alike for a wrong password and for an account that does not exist.
app.post("/auth/login", async (c) => {
  let credentials;
  try {
    credentials = await c.req.json();
  } catch {
    return c.json({ error: "expected a JSON body { username, password }" }, 400);
  }
  if (typeof credentials?.username !== "string" || typeof credentials?.password !== "string") {
    return c.json({ error: "expected a JSON body { username, password }" }, 400);
  }
  if (credentials.password !== DEMO_PASSWORD) return c.json({ error: "invalid credentials" }, 401);
  return c.json({ ok: true, action: "login" });
});
app.post("/auth/refresh", (c) => c.json({ ok: true, action: "refresh" }));
// The gateway forwards the client's Authorization on /api (forwardHeaders): the API sees its user.
app.get("/api/whoami", (c) => c.json({ user: bearerToken(c) ?? null }));
app.post("/api/checkout", (c) => c.json({ ok: true, action: "checkout" }));
app.get("/data", (c) => c.json({ data: "ok" }));
// A WebSocket echo, which the gateway proxies on /ws with connection and message limits.
app.get("/ws", (c) => {
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") return c.json({ error: "expected a WebSocket upgrade" }, 426);
  const pair = new WebSocketPair();
  const server = pair[1];
  server.accept();
  server.addEventListener("message", (event) => server.send(event.data));
  server.addEventListener("close", (event) => server.close(event.code === 1005 || event.code === 1006 ? 1000 : event.code, "bye"));
  return new Response(null, { status: 101, webSocket: pair[0] });
});
app.notFound((c) => c.json({ error: "no such endpoint" }, 404));

export class DemoUpstream extends WorkerEntrypoint {
  /** @param {Request} request */
  fetch(request) {
    return app.fetch(request, this.env, this.ctx);
  }
}
