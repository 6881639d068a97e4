// createLimiter alone in a plain fetch handler, keyed by a header: what sluice's engine costs.
import { createLimiter } from "sluice";

const limiter = createLimiter({ key: (request) => request.headers.get("x-user") ?? "anonymous", limit: 10, windowSec: 60 });

export default {
  async fetch(request, env, ctx) {
    const decision = await limiter.limit(request, env, ctx);
    if (!decision.allowed) return limiter.limitedResponse(decision);
    return limiter.withHeaders(new Response("ok"), decision);
  },
};
