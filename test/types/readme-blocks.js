import { Hono } from "hono";
import { rateLimit, ip } from "sluice/hono";

const app = new Hono();
// 10 logins a minute per IP; an IP that sends an 11th is refused everything for 5 minutes.
app.post("/auth/login", rateLimit({ key: ip(), limit: 10, windowSec: 60, blockSec: 300 }), (c) => c.text("welcome"));
