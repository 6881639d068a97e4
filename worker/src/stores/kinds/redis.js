// sluice/stores/redis: exact counts in Redis over the Upstash REST protocol (URL and token read from
// env), falling back to KV if asked for, then the isolate's memory, then failMode.
//
//   import { redisStore } from "sluice/stores/redis";
//   rateLimit({ key: apiKey(), limit: 1000, windowSec: 3600, store: redisStore });
//
// Loading this module also lets options say store: "redis".
import { createKvStore } from "../kv.js";
import { createRedisStore } from "../redis.js";
import { registerStoreKind } from "../registry.js";
import { buildRemoteStore } from "../remote.js";

/** @import { StoreKind } from "../registry.js" */

/**
 * redisStore is the value of the `store` option for counts in Redis (docs/redis.md); its settings
 * sit beside it in the options.
 * @type {StoreKind<"redis">}
 */
export const redisStore = Object.freeze({
  kind: "redis",
  build: (options) => buildRemoteStore("redis", options, { createKvStore, createRedisStore }),
});
registerStoreKind(redisStore);
