// The demo API with the seeds' tiers, as a Hono app using the middleware: the example of sluice/hono
// (README.md) and a fixture of the tests. The shipped Worker serves the same tiers as a gateway
// (index.js, gateway.config.json).
//   POST /auth/login    10 per minute per IP, and an IP that exceeds it is blocked for 5 minutes;
//                       JSON { username, password }: 200 for the password
//                       "correct horse battery staple", else 401. 5 failures for one account from one
//                       IP in 15 minutes lock that (account, IP) for 15 minutes; 20 from any IPs lock
//                       the account (lockout, counted by the Durable Object; docs/lockout.md)
//   POST /auth/refresh  30 per minute per IP
//   /api/*              120 per minute per user; the bearer token stands for the user id here (a real
//                       app plugs in its own authentication); no token falls back to the IP
//   POST /api/checkout  also 5 per minute per user, counted exactly by the Durable Object (SLUICE_DO),
//                       falling back to KV (SLUICE_KV), then the isolate's memory
//   GET  /data          5 per minute per IP and path, in fixed windows aligned to the epoch
import { Hono } from "hono";

import { DEMO_PASSWORD } from "./password.js";
import { firstOf, ip, jsonField, lockout, rateLimit, route, user } from "../src/hono.js";
// The demo's stand-in for authentication: "Authorization: Bearer <token>", the token as the user id.
import { bearerToken } from "../src/http/keys.js";

/**
 * createDemoApp builds the demo API. For tests: `clock` replaces the wall clock (fixed instants), and
 * `storeTimeoutMs` the Durable Object's 50 ms (a loaded test machine is not a Cloudflare location).
 */
/**
 * @param {{ clock?: () => number; storeTimeoutMs?: number }} [options]
 */
export function createDemoApp({ clock, storeTimeoutMs } = {}) {
  const app = new Hono();
  /** @param {Parameters<typeof rateLimit>[0]} options */
  const limit = (options) => rateLimit(clock === undefined ? options : { ...options, clock });
  const timeout = storeTimeoutMs === undefined ? {} : { timeoutMs: storeTimeoutMs };

  app.get("/", (c) =>
    c.json({
      routes: {
        "POST /auth/login": "10 per minute per IP (exceeding it blocks the IP for 5 minutes); 5 failures per account and IP (20 per account) in 15 minutes lock for 15 minutes",
        "POST /auth/refresh": "30 per minute per IP",
        "/api/*": "120 per minute per user (bearer token), else per IP",
        "POST /api/checkout": "also 5 per minute per user, counted by the Durable Object",
        "GET /data": "5 per minute per IP and path, fixed window",
      },
    }),
  );

  // Every attempt counts against the per-IP limit; only failed ones towards a lockout.
  const guard = lockout({
    name: "demo-lockout",
    key: jsonField("username"),
    maxFailures: 5,
    windowSec: 15 * 60,
    lockSec: 15 * 60,
    account: { maxFailures: 20 },
    // Counts live in the Durable Object; the isolate's tables are only its fallback while the object
    // is down, kept small here (the test fixture that mounts this app is near the isolate's table budget).
    keyCapacity: 100,
    ...(clock === undefined ? {} : { clock }),
    ...timeout,
  });
  // An IP that exceeds 10 logins a minute is blocked for 5 minutes (a block duration), not merely throttled.
  app.post("/auth/login", limit({ name: "login", key: ip(), limit: 10, windowSec: 60, blockSec: 300 }), guard, async (c) => {
    const { password } = await c.req.json();
    if (password !== DEMO_PASSWORD) return c.json({ error: "invalid credentials" }, 401);
    return c.json({ ok: true, action: "login" });
  });
  app.post("/auth/refresh", limit({ name: "refresh", key: ip(), limit: 30, windowSec: 60 }), (c) => c.json({ ok: true, action: "refresh" }));

  const perUser = firstOf(user(bearerToken), ip());
  app.use("/api/*", limit({ name: "api", key: perUser, limit: 120, windowSec: 60 }));
  app.get("/api/whoami", (c) => {
    // The decision the middleware took is the handler's to read; here, whom the request counted for.
    const decision = c.get("rateLimit");
    return c.json({ limitedAs: decision?.keys?.[0].startsWith("user:") ? "user" : "ip", remaining: decision?.remaining });
  });

  // On top of /api/*: one exact count for every isolate and location. The response says which store
  // decided (the Durable Object, or a fallback while it was failing or slow).
  app.post("/api/checkout", limit({ name: "checkout", key: perUser, limit: 5, windowSec: 60, store: "durable", ...timeout }), (c) => {
    const decision = c.get("rateLimit");
    return c.json({ ok: true, action: "checkout", remaining: decision?.remaining, decidedBy: decision?.store });
  });

  app.get("/data", limit({ name: "data", key: [ip(), route()], algorithm: "fixed-window", limit: 5, windowSec: 60 }), (c) => c.json({ data: "ok" }));

  return app;
}
