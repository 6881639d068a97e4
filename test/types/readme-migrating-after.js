import { Hono } from "hono";
import { ip, rateLimit } from "sluice/hono";

const app = new Hono();
app.use("/api/*", rateLimit({ windowMs: 15 * 60 * 1000, limit: 100, headers: "draft-7", key: ip(), algorithm: "fixed-window" }));
