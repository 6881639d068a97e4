// Each public module's .d.ts declares exactly the values listed in public-exports.js, which the run-time
// modules are held to in test/js/types.test.js.
import { PUBLIC_EXPORTS } from "./public-exports.js";
import type { Equal, Expect } from "./assert.js";

type Listed<Module extends keyof typeof PUBLIC_EXPORTS> = (typeof PUBLIC_EXPORTS)[Module][number];

type _sluice = Expect<Equal<keyof typeof import("sluice"), Listed<"sluice">>>;
type _hono = Expect<Equal<keyof typeof import("sluice/hono"), Listed<"sluice/hono">>>;
type _durableObject = Expect<Equal<keyof typeof import("sluice/durable-object"), Listed<"sluice/durable-object">>>;
type _durableKind = Expect<Equal<keyof typeof import("sluice/stores/durable"), Listed<"sluice/stores/durable">>>;
type _kvKind = Expect<Equal<keyof typeof import("sluice/stores/kv"), Listed<"sluice/stores/kv">>>;
type _redisKind = Expect<Equal<keyof typeof import("sluice/stores/redis"), Listed<"sluice/stores/redis">>>;
type _testing = Expect<Equal<keyof typeof import("sluice/testing"), Listed<"sluice/testing">>>;
type _core = Expect<Equal<keyof typeof import("sluice/core"), Listed<"sluice/core">>>;
type _loader = Expect<Equal<keyof typeof import("../../types/wasm-bindings/sluice.js"), Listed<"wasm-bindings/sluice.js">>>;
type _gateway = Expect<Equal<keyof typeof import("../../types/worker/gateway/gateway.js"), Listed<"worker/gateway/gateway.js">>>;
