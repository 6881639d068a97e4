// sluice: rate limiting for Cloudflare Workers, decided by a C++ core compiled to WebAssembly.
// The framework-free entry; the Hono middleware is sluice/hono, the Durable Object class
// sluice/durable-object (it imports cloudflare:workers, so it has an entry of its own).
export { createLimiter } from "./engine/limiter.js";
export { createConcurrencyLimiter } from "./features/concurrency/limiter.js";
export { ChunkLimitError, createMessageLimiter, limitChunks, limitMessages } from "./features/websocket/message-limit.js";
export { apiKey, compose, firstOf, ip, route, user } from "./http/keys.js";
export { cf, cookie, query } from "./http/characteristics.js";
export { verifiedClaim } from "./http/jwt.js";
export { createAccessList } from "./features/lists/access-list.js";
export { isolateStats } from "./engine/isolate.js";
export { storeStats } from "./stores/registry.js";
export { createMemoryStore } from "./stores/memory.js";
export { createDurableStore } from "./stores/durable.js";
export { createKvStore } from "./stores/kv.js";
export { createRedisStore } from "./stores/redis.js";
export { createFallbackChain } from "./stores/chain.js";
export { SluiceConfigError } from "./engine/errors.js";
export { accuracyProbe } from "./features/accuracy/probe.js";
export { createLockout } from "./features/lockout/lockout.js";
export { createResponseLimiter } from "./features/response-count/limiter.js";
export { liveOverrides } from "./features/overrides/live.js";
export { overrideList } from "./features/overrides/overrides.js";
export { overridesAdmin } from "./features/overrides/admin.js";
export { jsonField, normalizeAccount } from "./http/account.js";

// The public types, defined in JSDoc beside the code they describe and re-exported here.
/** @typedef {import("./engine/limiter.js").BypassedDecision} BypassedDecision */
/** @typedef {import("./engine/limiter.js").CheckedDecision} CheckedDecision */
/** @template [Env=any] @typedef {import("./engine/limiter.js").Limiter<Env>} Limiter */
/** @template [Env=any] @typedef {import("./engine/limiter.js").LimiterOptions<Env>} LimiterOptions */
/** @typedef {import("./engine/limiter.js").NothingCounted} NothingCounted */
/** @typedef {import("./engine/limiter.js").RateLimitDecision} RateLimitDecision */
/** @typedef {import("./engine/limiter.js").SkippedDecision} SkippedDecision */
/** @typedef {import("./features/concurrency/engine.js").ConcurrencyDecision} ConcurrencyDecision */
/** @template {unknown[]} [Args=any[]] @typedef {import("./features/concurrency/options.js").ConcurrencyCommonOptions<Args>} ConcurrencyOptions */
/** @typedef {import("./features/websocket/message-limit.js").MessageLimitOptions} MessageLimitOptions */
/** @typedef {import("./features/websocket/message-limit.js").MessageLimiter} MessageLimiter */
/** @typedef {import("./features/websocket/message-limit.js").MessageGate} MessageGate */
/** @typedef {import("./features/websocket/message-limit.js").GateSnapshot} GateSnapshot */
/** @typedef {import("./http/keys.js").IpOptions} IpOptions */
/** @typedef {import("./http/jwt.js").JwtOptions} JwtOptions */
/** @typedef {import("./features/lists/access-list.js").AccessListOptions} AccessListOptions */
/** @typedef {import("./features/lists/access-list.js").ListMatch} ListMatch */
/** @template {unknown[]} [Args=any[]] @typedef {import("./http/keys.js").KeyFunction<Args>} KeyFunction */
/** @typedef {import("./http/keys.js").KeyHelper} KeyHelper */
/** @typedef {import("./http/keys.js").KeyInput} KeyInput */
/** @typedef {import("./http/keys.js").KeyPart} KeyPart */
/** @template {unknown[]} [Args=any[]] @typedef {import("./http/keys.js").KeySource<Args>} KeySource */
/** @typedef {import("./engine/isolate.js").IsolateStats} IsolateStats */
/** @typedef {import("./features/accuracy/probe.js").AccuracyProbe} AccuracyProbe */
/** @typedef {import("./features/overrides/overrides.js").Override} Override */
/** @typedef {import("./features/overrides/overrides.js").OverrideList} OverrideList */
/** @typedef {import("./features/accuracy/probe.js").AccuracyCounters} AccuracyCounters */
/** @typedef {import("./features/accuracy/probe.js").AccuracyOptions} AccuracyOptions */
/** @typedef {import("./stores/registry.js").StoreStats} StoreStats */
/** @typedef {import("./stores/memory.js").MemoryStore} MemoryStore */
/** @typedef {import("./stores/durable.js").DurableStore} DurableStore */
/** @typedef {import("./stores/durable.js").DurableStoreOptions} DurableStoreOptions */
/** @typedef {import("./stores/kv.js").KvStore} KvStore */
/** @typedef {import("./stores/kv.js").KvStoreOptions} KvStoreOptions */
/** @typedef {import("./stores/redis.js").RedisStore} RedisStore */
/** @typedef {import("./stores/redis.js").RedisStoreCounters} RedisStoreCounters */
/** @typedef {import("./stores/redis.js").RedisStoreOptions} RedisStoreOptions */
/** @typedef {import("./stores/chain.js").FallbackChain} FallbackChain */
/** @typedef {import("./stores/chain.js").FallbackChainOptions} FallbackChainOptions */
/** @template {unknown[]} Args @typedef {import("./engine/options.js").CommonOptions<Args>} CommonOptions */
/** @typedef {import("./engine/options.js").HeaderMode} HeaderMode */
/** @typedef {import("./engine/options.js").LimitFunction} LimitFunction */
/** @template {unknown[]} [Args=any[]] @typedef {import("./engine/options.js").RuleOptions<Args>} RuleOptions */
/** @typedef {import("./engine/options.js").RuleQuota} RuleQuota */
/** @typedef {import("./stores/registry.js").DurableStoreSettings} DurableStoreSettings */
/** @typedef {import("./stores/registry.js").KvStoreSettings} KvStoreSettings */
/** @typedef {import("./stores/registry.js").RedisStoreSettings} RedisStoreSettings */
/** @typedef {import("./stores/registry.js").LimiterStoreOptions} LimiterStoreOptions */
/** @typedef {import("./stores/registry.js").StoreOption} StoreOption */
/** @typedef {import("./stores/store.js").IsolateTable} IsolateTable */
/** @typedef {import("./stores/store.js").NormalizedRule} NormalizedRule */
/** @typedef {import("./stores/store.js").Outcome} Outcome */
/** @typedef {import("./stores/store.js").Store} Store */
/** @typedef {import("./stores/store.js").StoreCheck} StoreCheck */
/** @typedef {import("./stores/store.js").StoreOptions} StoreOptions */
/** @typedef {import("./stores/store.js").TimedStoreOptions} TimedStoreOptions */
/** @typedef {import("../../wasm-bindings/sluice.js").AlgorithmName} AlgorithmName */
/** @typedef {import("../../wasm-bindings/sluice.js").Decision} Decision */
/** @template {unknown[]} [Args=any[]] @typedef {import("./features/lockout/options.js").LockoutOptions<Args>} LockoutOptions */
/** @typedef {import("./features/lockout/lockout.js").Lockout} Lockout */
/** @typedef {import("./features/lockout/lockout.js").LockoutAttempt} LockoutAttempt */
/** @typedef {import("./features/lockout/lockout.js").LockoutSettlement} LockoutSettlement */
