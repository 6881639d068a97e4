// docs/typescript.md's example, as printed there: it must compile (strict) against the declarations.
import { Hono } from "hono";
import { ip, rateLimit, user } from "sluice/hono";

type AppEnv = { Bindings: { PLAN: "free" | "pro" }; Variables: { accountId: string } };
const app = new Hono<AppEnv>();

app.use(
  "/api/*",
  rateLimit<AppEnv>({
    key: user(async (c) => (await c.req.json<{ id: string }>()).id), // c: Context<AppEnv>
    limit: (c) => (c.env.PLAN === "pro" ? 1000 : 100),
    windowSec: 60,
    skip: (c) => c.var.accountId === "internal",
  }),
);
