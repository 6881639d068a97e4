// README's quick start: every /api/* route limited per client address, in this isolate's memory.
import { Hono } from "hono";
import { rateLimit, ip } from "sluice/hono";

const app = new Hono();
app.use("/api/*", rateLimit({ key: ip(), limit: 5, windowSec: 60 }));
app.get("/api/hello", (c) => c.json({ hello: "world", left: c.get("rateLimit")?.remaining }));
export default app;
