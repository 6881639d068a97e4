// A Hono app without sluice: the baseline the quick start is measured against.
import { Hono } from "hono";
const app = new Hono();
app.get("/api/hello", (c) => c.json({ hello: "world" }));
export default app;
