// The one hand-written declaration of sluice's types: JSDoc cannot augment another module's interface,
// and Hono types context variables only through its ContextVariableMap. scripts/build-types.js copies
// this file beside the generated hono.d.ts and imports it from there, so `import "sluice/hono"` brings it.
import type { LockoutAttempt, MiddlewareDecision } from "./hono.js";
import type { ConcurrencyDecision } from "./features/concurrency/engine.js";
import type { ListMatch } from "./features/lists/access-list.js";

declare module "hono" {
  interface ContextVariableMap {
    /**
     * The decision of the rate-limit middleware that ran last for this request; undefined when `skip`
     * let the request through or no rate-limit middleware ran on its route.
     */
    rateLimit: MiddlewareDecision | undefined;
    /** The login attempt as the lockout middleware judged it; undefined on routes without it (docs/lockout.md). */
    lockout: LockoutAttempt | undefined;
    /**
     * The decision of the concurrency middleware that ran last for this request; undefined when `skip`
     * let the request through or no concurrency middleware ran on its route.
     */
    concurrency: ConcurrencyDecision | undefined;
    /** Which list the access-list middleware matched the request on; undefined on routes without it (docs/lists.md). */
    accessList: ListMatch | undefined;
  }
}
