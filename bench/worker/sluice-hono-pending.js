// Stands in for bench:sluice-hono while worker/src/hono.js does not exist (bench/lib/bundle.js picks
// this file or bench/worker/sluice-hono.js): figure 5 then reports sluice's row as pending.
export const makeMiddleware = undefined;
export const pendingReason = "pending: worker/src/hono.js (the rateLimit middleware) is not in this tree yet";
