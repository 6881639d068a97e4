import { Hono } from "hono";
import { ip, rateLimit } from "sluice/hono";
import { testClock } from "sluice/testing";

const clock = testClock(); // 2030-01-01T00:00:00Z until moved
const app = new Hono();
app.use("/api/*", rateLimit({ key: ip(), limit: 3, windowSec: 60, clock }));
app.get("/api/hello", (c) => c.text("hello"));

const from = { headers: { "cf-connecting-ip": "192.0.2.1" } };
for (let i = 0; i < 4; i++) console.log((await app.request("/api/hello", from)).status); // 200, 200, 200, 429
clock.advance(60_000); // a minute later, at once
console.log((await app.request("/api/hello", from)).status); // 200
