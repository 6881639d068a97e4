// What a Hono middleware of sluice carries besides being one (rateLimit, rateLimitOnResponse): the
// limiter's peek, get and reset, given a context, for tests and admin routes.
import { executionContextOf } from "./execution-context.js";

/** @import { Context, Env } from "hono" */
/** @import { CheckedDecision, RateLimitDecision } from "./limiter.js" */
/** @import { CostCounters } from "../features/response-count/cost.js" */

/**
 * `peek(c)`: the decision the middleware would take now, charging nothing. `get(c)`: the counters of
 * the request's keys as they stand (a cost of 1, peeked). `reset(c)`: forgets the request's keys.
 * @template {Env} [E=Env]
 * @typedef {object} RateLimitHandle
 * @property {(c: Context<E>) => Promise<RateLimitDecision>} peek
 * @property {(c: Context<E>) => Promise<CheckedDecision>} get
 * @property {(c: Context<E>) => Promise<void>} reset
 * @property {CostCounters | null} costCounters With costFrom (rateLimitOnResponse): how the responses' costs were read
 *   (from the header, clamped to max, missing, invalid, exhausting the key); else null.
 */

/**
 * middlewareHandle builds the handle of a middleware from its engine (engine/limiter.js createEngine).
 * @template {Env} [E=Env]
 * @param {{ evaluate: (args: readonly unknown[], env: any, ctx: any, peek?: boolean) => Promise<RateLimitDecision>, get: (args: readonly unknown[], env: any, ctx: any) => Promise<CheckedDecision>, reset: (args: readonly unknown[], env: any, ctx: any) => Promise<void> }} engine
 * @param {CostCounters | null} costCounters
 * @returns {RateLimitHandle<E>}
 */
export function middlewareHandle({ evaluate, get, reset }, costCounters) {
  return {
    peek: (c) => evaluate([c], c.env, executionContextOf(c), true),
    get: (c) => get([c], c.env, executionContextOf(c)),
    reset: (c) => reset([c], c.env, executionContextOf(c)),
    costCounters,
  };
}
