// Between tests: forget every count this isolate holds, as a fresh isolate would start.
import { isolateTestHooks } from "../engine/isolate.js";

/**
 * resetLimiters forgets what every limiter of this isolate counted in memory (the memory store, the
 * isolate's fallback counts) and the isolate's statistics: each limiter, built before or after, starts
 * from its full quota. Limiters stay as they were built. Counts kept outside the isolate (a Durable
 * Object, KV, Redis), and a remote store's memory of the denials it answered (its pre-filter), are
 * theirs to reset: a fresh Miniflare or storage per test, or limiter.reset(request), which forgets both.
 */
export function resetLimiters() {
  isolateTestHooks.reset();
}
