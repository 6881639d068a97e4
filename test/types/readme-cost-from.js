import { Hono } from "hono";
import { rateLimitOnResponse, ip } from "sluice/hono";

const app = new Hono();
// 10,000 units a minute per IP; each search says what it cost.
app.get("/search", rateLimitOnResponse({ key: ip(), limit: 10000, windowSec: 60, costFrom: { header: "x-sluice-cost", max: 500 } }), (c) =>
  c.json({ rows: [] }, 200, { "x-sluice-cost": "42" }),
);
