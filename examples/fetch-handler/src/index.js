// A Worker without a framework: createLimiter from "sluice" (hono is not installed here at all).
import { createLimiter, ip } from "sluice";

const limiter = createLimiter({ key: ip(), limit: 10, windowSec: 60 });

export default {
  async fetch(request, env, ctx) {
    const decision = await limiter.limit(request, env, ctx);
    if (!decision.allowed) return limiter.limitedResponse(decision);
    return limiter.withHeaders(new Response("ok"), decision);
  },
};
