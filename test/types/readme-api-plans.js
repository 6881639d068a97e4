import { Hono } from "hono";
import { rateLimit, user } from "sluice/hono";

const PLANS = { free: 60, pro: 600, enterprise: 6000 };

const app = new Hono();
const perPlan = rateLimit({
  name: "api",
  key: user((c) => c.get("userId")),
  limit: (c) => PLANS[c.req.header("x-plan")] ?? PLANS.free,
  windowSec: 60,
});
app.use("/api/*", perPlan);
app.post("/admin/unblock", async (c) => {
  await perPlan.reset(c);
  return c.json(await perPlan.get(c));
});
export default app;
