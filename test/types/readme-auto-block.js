import { Hono } from "hono";
import { rateLimit, ip, autoBlock } from "sluice/hono";

const app = new Hono();
// 10 a minute per IP; an IP refused 20 times within 10 minutes is refused everything for an hour.
app.use("/api/*", rateLimit({ key: ip(), limit: 10, windowSec: 60, autoBlock: autoBlock({ after: 20, withinSec: 600, blockSec: 3600 }) }));
