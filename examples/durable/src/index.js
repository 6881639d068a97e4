// Exact limits across every isolate and location: the counts live in a Durable Object.
import { Hono } from "hono";
import { rateLimit, user } from "sluice/hono";
// The Worker's main module must export the class wrangler.toml binds as SLUICE_DO.
export { SluiceDurableObject } from "sluice/durable-object";

const app = new Hono();
app.post(
  "/checkout",
  // timeoutMs: a fixed wait for the object, generous for a cold local start (by default each isolate
  // learns each object's round trip); past it the request is denied, since no fallback is configured.
  rateLimit({ key: user((c) => c.req.header("x-user-id")), limit: 5, windowSec: 60, store: "durable", timeoutMs: 2000 }),
  (c) => c.json({ ordered: true, decidedBy: c.get("rateLimit")?.store }),
);
export default app;
