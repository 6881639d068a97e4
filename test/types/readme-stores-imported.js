import { Hono } from "hono";
import { rateLimit, user } from "sluice/hono";
import { durableStore } from "sluice/stores/durable"; // or kvStore from "sluice/stores/kv", redisStore from "sluice/stores/redis"
export { SluiceDurableObject } from "sluice/durable-object";

const app = new Hono();
app.post("/checkout", rateLimit({ key: user((c) => c.get("userId")), limit: 5, windowSec: 60, store: durableStore, timeoutMs: 30 }), checkout);
export default app;
