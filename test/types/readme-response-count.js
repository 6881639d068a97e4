import { Hono } from "hono";
import { rateLimitOnResponse, ip } from "sluice/hono";

const app = new Hono();
// 5 failed logins per IP in 10 minutes; successful logins spend nothing.
app.post("/login", rateLimitOnResponse({ key: ip(), limit: 5, windowSec: 600, countWhen: { status: [401, 403] } }), (c) => c.text("welcome"));
