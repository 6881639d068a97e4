// The Worker under test: an API limited per client address, and a stricter limit on login.
import { Hono } from "hono";
import { ip, rateLimit } from "sluice/hono";

const app = new Hono();
app.use("/api/*", rateLimit({ key: ip(), limit: 5, windowSec: 60 }));
app.get("/api/hello", (c) => c.json({ hello: "world", left: c.get("rateLimit")?.remaining }));
app.post("/login", rateLimit({ key: ip(), limit: 2, windowSec: 60, name: "login" }), (c) => c.text("welcome"));
export default app;
