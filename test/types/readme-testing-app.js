import { Hono } from "hono";
import { ip, rateLimit } from "sluice/hono";

/** @param {{ clock?: () => number }} [options] */
export function createApp({ clock } = {}) {
  const app = new Hono();
  app.use("/api/*", rateLimit({ key: ip(), limit: 3, windowSec: 60, algorithm: "fixed-window", ...(clock ? { clock } : {}) }));
  app.get("/api/hello", (c) => c.json({ hello: "world" }));
  return app;
}
