import { createConcurrencyLimiter, ip } from "sluice";

const uploads = createConcurrencyLimiter({ key: ip(), max: 1, leaseSec: 120, store: "durable" });
export default {
  fetch: (request, env, ctx) => uploads.handle(request, env, ctx, (request) => acceptUpload(request)),
};
