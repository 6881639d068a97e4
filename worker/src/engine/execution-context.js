// The request's ExecutionContext as the Hono middlewares hand it to stores (for ctx.waitUntil).

/** @import { Context } from "hono" */

/**
 * executionContextOf returns `c.executionCtx`, or undefined where there is none: Hono's getter throws
 * then (app.request() without one, as tests call apps).
 * @param {Context} c
 */
export function executionContextOf(c) {
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  }
}
