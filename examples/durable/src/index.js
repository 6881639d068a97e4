// Exact limits across every isolate and location: the counts live in a Durable Object.
import { Hono } from "hono";
import { rateLimit, user } from "sluice/hono";
// The Worker's main module must export the class wrangler.toml binds as SLUICE_DO.
export { SluiceDurableObject } from "sluice/durable-object";

const app = new Hono();
app.post(
  "/checkout",
  // timeoutMs: how long the object may take before the fallback (this isolate's memory) decides.
  rateLimit({ key: user((c) => c.req.header("x-user-id")), limit: 5, windowSec: 60, store: "durable", timeoutMs: 2000 }),
  (c) => c.json({ ordered: true, decidedBy: c.get("rateLimit")?.store }),
);
export default app;
