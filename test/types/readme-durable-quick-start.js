import { Hono } from "hono";
import { rateLimit, user } from "sluice/hono";
// wrangler.toml binds this class as SLUICE_DO (docs/stores.md, "The Durable Object store"); the main module must export it.
export { SluiceDurableObject } from "sluice/durable-object";

const app = new Hono();
app.post("/checkout", rateLimit({ key: user((c) => c.get("userId")), limit: 5, windowSec: 60, store: "durable" }), checkout);
export default app;
