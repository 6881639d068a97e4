// docs/typescript.md's example, as printed there: it must compile (strict) against the declarations.
import { createLimiter, user } from "sluice";

interface WorkerEnv { PLAN: "free" | "pro" }
const limiter = createLimiter<WorkerEnv>({
  key: user((request, env) => `${env.PLAN}:${request.headers.get("x-user")}`),
  limit: 10,
  windowSec: 60,
});
