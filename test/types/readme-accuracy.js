import { Hono } from "hono";
import { accuracyProbe, ip, rateLimit } from "sluice/hono";

const accuracy = accuracyProbe({ sample: 0.01 });
const app = new Hono();
app.use("/api/*", rateLimit({ key: ip(), limit: 100, windowSec: 60, accuracy }));
// accuracy.counters: { sampled, agreed, overAdmitted, underAdmitted, failed }
export default app;
