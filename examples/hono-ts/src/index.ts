// The quick start in TypeScript, plus a limit per signed-in user with a response of one's own.
import { Hono } from "hono";
import { ip, rateLimit, user, type MiddlewareDecision } from "sluice/hono";

type Env = { Bindings: { ENV?: string } };

const app = new Hono<Env>();
app.use("/api/*", rateLimit({ key: ip(), limit: 5, windowSec: 60 }));
app.get("/api/hello", (c) => c.json({ hello: "world", left: c.get("rateLimit")?.remaining }));

app.post(
  "/api/orders",
  rateLimit<Env>({
    key: user((c) => c.req.header("x-user-id")),
    limit: 2,
    windowSec: 60,
    onLimited: (c, decision) => c.json({ error: "slow down", retryAfterMs: decision.retryAfterMs }, 429),
  }),
  (c) => {
    // Undefined when the middleware did not run for this request; here it always did.
    const decision: MiddlewareDecision | undefined = c.get("rateLimit");
    return c.json({ ordered: true, left: decision?.remaining ?? null });
  },
);

export default app;
