// What README.md's examples (the readme-*.js files, each one of its ```js blocks as printed) take
// from the code around them, which the README leaves out. Nothing here is sluice's: it stands for the
// reader's own application.
import type { Handler } from "hono";
import type { KeyHelper, Store } from "sluice";

declare global {
  /** The handler the durable quick start limits. */
  const checkout: Handler;
  /** The key of the store examples' middleware calls. */
  const key: KeyHelper;
  /** The middleware, imported in the code around the Durable Object store example. */
  const rateLimit: typeof import("sluice/hono").rateLimit;
  /** The stores the fallback chain example is built from (the examples above it build them). */
  const durable: Store;
  const kv: Store;
  const memory: Store;
  /** The application's own credential check and login handler, around the lockout examples (docs/lockout.md). */
  function checkPassword(username: string, password: string): Promise<boolean>;
  function login(request: Request, env: unknown): Promise<Response>;
  /** The handlers the concurrency examples (docs/concurrency.md) hold slots for. */
  const renderReport: Handler;
  const streamEvents: Handler;
  const acceptUpload: (request: Request) => Response | Promise<Response>;
  /** Hono's upgradeWebSocket from hono/cloudflare-workers (its types clash with @cloudflare/workers-types here). */
  const upgradeWebSocket: (create: (c: import("hono").Context) => { onMessage?: (event: { data: string }, ws: { send(data: string): void; close(code?: number, reason?: string): void }) => void }) => import("hono").MiddlewareHandler;
}

declare module "hono" {
  interface ContextVariableMap {
    /** Set by the application's authentication middleware, which the durable quick start leaves out. */
    userId: string;
  }
}
