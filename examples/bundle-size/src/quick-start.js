// README's quick start, as written there: what a memory-only Hono app pays for sluice.
import { Hono } from "hono";
import { rateLimit, ip } from "sluice/hono";

const app = new Hono();
app.use("/api/*", rateLimit({ key: ip(), limit: 120, windowSec: 60 }));
app.get("/api/hello", (c) => c.json({ hello: "world", left: c.get("rateLimit")?.remaining }));
export default app;
