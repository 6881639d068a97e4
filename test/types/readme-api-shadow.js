import { createLimiter, ip } from "sluice";

const trial = createLimiter({ name: "trial", key: ip(), limit: 100, windowSec: 60, mode: "shadow" });

export default {
  async fetch(request, env, ctx) {
    const decision = await trial.limit(request, env, ctx);
    if (decision.bypassed || decision.skipped) return fetch(request);
    if (decision.wouldDeny) console.log("trial would have denied", decision.keys[0]);
    return trial.withHeaders(await fetch(request), decision);
  },
};
