// The concurrency limit as a TypeScript Worker uses it: the Hono middleware with c.get("concurrency")
// typed, the framework-free limiter, and options the types must refuse.
import { Hono } from "hono";
import { concurrency, ip, user } from "sluice/hono";
import { createConcurrencyLimiter, type ConcurrencyDecision } from "sluice";
import type { Equal, Expect } from "./assert.js";

const app = new Hono<{ Variables: { userId: string } }>();
app.get(
  "/reports",
  concurrency({ key: user((c) => c.get("userId")), max: 2, leaseSec: 60, store: "durable", onLimited: (c, decision) => c.text(`busy: ${decision.limit}`, 429) }),
  (c) => {
    const decision = c.get("concurrency");
    type _decision = Expect<Equal<typeof decision, ConcurrencyDecision | undefined>>;
    return c.text(String(decision?.remaining));
  },
);
app.get("/ws", concurrency({ key: ip(), max: 3, status: 503, retryAfterSec: 5 }));

const limiter = createConcurrencyLimiter({ key: ip(), max: 1, cost: (request) => (request.method === "POST" ? 1 : 1) });
export default {
  fetch: (request: Request, env: unknown, ctx: ExecutionContext) => limiter.handle(request, env, ctx, () => new Response("ok")),
};

// @ts-expect-error max is required
concurrency({ key: ip() });
// @ts-expect-error store "kv" is not a concurrency store
concurrency({ key: ip(), max: 1, store: "kv" });
