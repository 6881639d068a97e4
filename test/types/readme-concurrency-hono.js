import { Hono } from "hono";
import { concurrency, ip, user } from "sluice/hono";

const app = new Hono();

// At most 2 reports per user being rendered at once, counted exactly across isolates.
app.get("/reports/:id", concurrency({ key: user((c) => c.get("userId")), max: 2, leaseSec: 60, store: "durable" }), renderReport);

// At most 3 open event streams per IP, in this isolate.
app.get("/events", concurrency({ key: ip(), max: 3 }), streamEvents);
