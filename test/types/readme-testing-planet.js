import { createLimiter } from "sluice";
import { durableStore } from "sluice/stores/durable";
import { createRegion } from "sluice/testing";

const limiter = createLimiter({ key: (request) => request.headers.get("x-user"), limit: 5, windowSec: 60, store: durableStore });
const sydney = createRegion({ name: "sydney", rttMs: 250, jitter: 0.2, seed: 1 });

// In a test: the limiter as a Worker in Sydney sees it, every call to the object 250 ms (± 20 %) away.
export function limitFromSydney(request, env, ctx) {
  return limiter.limit(request, { ...env, SLUICE_DO: sydney.namespace(env.SLUICE_DO, { ctx }) }, ctx);
}
