import { createLockout, jsonField } from "sluice";

const lockout = createLockout({ key: jsonField("username") });

export default {
  async fetch(request, env, ctx) {
    const attempt = await lockout.check(request, env, ctx);
    if (!attempt.allowed) return lockout.refusedResponse(attempt); // 429 locked, 400 no account
    const response = await login(request, env);
    await lockout.settle(attempt, response); // counts it: from the status, or attempt.fail()/succeed()
    return response;
  },
};
