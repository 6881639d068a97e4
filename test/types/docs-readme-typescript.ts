// README.md's TypeScript example, as printed there: it must compile (strict) against the declarations.
import { Hono } from "hono";
import { rateLimit, user } from "sluice/hono";

type AppEnv = { Bindings: { PLAN: "free" | "pro" }; Variables: { accountId: string } };
const app = new Hono<AppEnv>();

app.use("/api/*", rateLimit<AppEnv>({ key: user((c) => c.var.accountId), limit: (c) => (c.env.PLAN === "pro" ? 1000 : 100), windowSec: 60 }));
export default app;
