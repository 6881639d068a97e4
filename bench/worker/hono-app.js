// Figure 5: one Hono app, one route per middleware and a bare route, all answering the same body.
// Built lazily inside a request: hono-rate-limiter's MemoryStore starts a setInterval when the
// middleware is created, and workerd refuses timers outside a request.
import { Hono } from "hono";
import { rateLimiter } from "hono-rate-limiter";
import * as sluiceHono from "bench:sluice-hono";
import { PlainFixedWindow } from "./plain-js.js";

export const LIMIT = 1_000_000_000;
export const WINDOW_MS = 3_600_000;
const clientKey = (c) => c.req.header("cf-connecting-ip") ?? "unknown";

// A hand-written middleware over the plain-JS fixed window, setting the same draft-6 headers as
// hono-rate-limiter: the floor of what a rate-limiting middleware costs.
function plainMiddleware() {
  const limiter = new PlainFixedWindow({ limit: LIMIT, windowMs: WINDOW_MS });
  return async function plainRateLimit(c, next) {
    const d = limiter.decide(clientKey(c), Date.now());
    c.header("RateLimit-Policy", `${LIMIT};w=${WINDOW_MS / 1000}`);
    c.header("RateLimit-Limit", String(LIMIT));
    c.header("RateLimit-Remaining", String(d.remaining));
    c.header("RateLimit-Reset", String(Math.ceil(d.resetMs / 1000)));
    if (!d.allowed) return c.text("Too many requests", 429);
    await next();
  };
}

/** ROUTES: route name -> how its middleware is made (null: the bare route). */
export const ROUTES = Object.freeze({
  bare: () => null,
  "plain-js-middleware": plainMiddleware,
  "hono-rate-limiter": () =>
    rateLimiter({ windowMs: WINDOW_MS, limit: LIMIT, standardHeaders: "draft-6", keyGenerator: clientKey }),
  // The sluice row exists only once worker/src/hono.js does (see bench/lib/bundle.js).
  sluice: sluiceHono.makeMiddleware === undefined ? undefined : () => sluiceHono.makeMiddleware({ limit: LIMIT, windowMs: WINDOW_MS, clientKey }),
});

/** sluiceStatus says why the sluice route is missing, or null when it is there. */
export const sluiceStatus = sluiceHono.makeMiddleware === undefined ? sluiceHono.pendingReason : null;

export function buildApp() {
  const app = new Hono();
  for (const [name, make] of Object.entries(ROUTES)) {
    if (make === undefined) continue;
    const middleware = make();
    const handler = (c) => c.text("ok");
    if (middleware === null) app.get(`/${name}`, handler);
    else app.get(`/${name}`, middleware, handler);
  }
  return app;
}
