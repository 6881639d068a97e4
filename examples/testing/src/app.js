// The app under test, built by a function so that tests can hand it a clock they advance.
import { Hono } from "hono";
import { ip, rateLimit, user } from "sluice/hono";
import { durableStore } from "sluice/stores/durable";

/** @param {{ clock?: () => number }} [options] */
export function createApp({ clock } = {}) {
  const app = new Hono();
  // 3 a minute per client address, in this isolate's memory, on the clock given (the wall clock if none).
  app.use("/api/*", rateLimit({ key: ip(), limit: 3, windowSec: 60, algorithm: "fixed-window", ...(clock ? { clock } : {}) }));
  app.get("/api/hello", (c) => c.json({ hello: "world" }));
  // 2 a minute per user, exactly, in the Durable Object (it decides on its own clock).
  app.post(
    "/checkout",
    rateLimit({ name: "checkout", key: user((c) => c.req.header("x-user")), limit: 2, windowSec: 60, store: durableStore, timeoutMs: 1000, fallback: [] }),
    (c) => c.text("paid"),
  );
  return app;
}
