rateLimit({ key, limit: 100, windowSec: 60, store: "redis" });   // through the middleware
import { createFallbackChain, createMemoryStore, createRedisStore } from "sluice";   // or on its own
const redis = createRedisStore({ urlEnv: "UPSTASH_REDIS_REST_URL", tokenEnv: "UPSTASH_REDIS_REST_TOKEN" });
const chain = createFallbackChain({ primary: redis, memory: createMemoryStore(), failMode: "closed" });
