// bench:sluice-hono when worker/src/hono.js exists (bench/lib/bundle.js): sluice's own Hono middleware,
// configured like the peers' in figure 5 (fixed window, the client's address as the key, draft headers).
import { ip, rateLimit } from "../../worker/src/hono.js";

export const pendingReason = null;

export function makeMiddleware({ limit, windowMs }) {
  return rateLimit({
    name: "bench",
    key: ip(),
    algorithm: "fixed-window",
    limit,
    windowSec: windowMs / 1000,
    headers: "draft",
    bypass: false,
  });
}
