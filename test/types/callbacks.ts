// Callbacks are typed from the app, never `any`: each IsAny<...> below is false, so a change that lets
// `any` into a public callback (key, cost, skip, limit, onLimited; user(), compose(), firstOf()) fails
// to compile. `rateLimit<AppEnv>(...)` types the context with the app's bindings and variables;
// without it the context is Context<Env>, whose c.get() reads ContextVariableMap.
import { Hono, type Context, type Env } from "hono";
import { compose, firstOf, ip, jsonField, rateLimit, user } from "sluice/hono";
import { createLimiter, user as userOfRequest } from "sluice";
import type { Equal, Expect, IsAny } from "./assert.js";

type AppEnv = { Bindings: { PLAN: "free" | "pro"; SLUICE_DO: DurableObjectNamespace }; Variables: { accountId: string } };
const app = new Hono<AppEnv>();

// Without the app's Env: the context is Context<Env>, not any.
app.use(
  "/a/*",
  rateLimit({
    key: user((c) => {
      type _ = Expect<Equal<IsAny<typeof c>, false>>;
      type __ = Expect<Equal<typeof c, Context<Env>>>;
      return c.req.header("x-user");
    }),
    limit: 10,
    windowSec: 60,
  }),
);
app.use(
  "/b/*",
  rateLimit({
    key: (c) => {
      type _ = Expect<Equal<IsAny<typeof c>, false>>;
      return c.req.header("x-user");
    },
    limit: 10,
    windowSec: 60,
  }),
);
// @ts-expect-error the context is not a number (it was `any`, and this compiled)
rateLimit({ key: user((c) => { const x: number = c; return String(x); }), limit: 1, windowSec: 1 });

// With the app's Env: bindings and variables typed, c.req.json<T>() callable.
app.use(
  "/c/*",
  rateLimit<AppEnv>({
    key: user(async (c) => {
      type _ = Expect<Equal<typeof c, Context<AppEnv>>>;
      const body = await c.req.json<{ id: string }>();
      return `${c.var.accountId}:${body.id}`;
    }),
    limit: (c) => (c.env.PLAN === "pro" ? 1000 : 100),
    windowSec: 60,
    cost: (c) => {
      type _ = Expect<Equal<typeof c, Context<AppEnv>>>;
      return c.req.method === "POST" ? 2 : 1;
    },
    skip: (c) => c.env.PLAN === "pro",
    onLimited: (c, decision) => {
      type _ = Expect<Equal<typeof c, Context<AppEnv>>>;
      return c.json({ retryAfter: decision.retryAfterMs }, 429);
    },
  }),
);
// Inside compose() and firstOf(), user() does not see the limiter's Env: give it (user<AppEnv>).
app.use("/d/*", rateLimit<AppEnv>({ key: compose(ip(), user<AppEnv>((c) => c.var.accountId)), limit: 10, windowSec: 60 }));
app.use("/e/*", rateLimit<AppEnv>({ key: firstOf(user<AppEnv>((c) => c.var.accountId), ip()), limit: 10, windowSec: 60 }));
app.use("/f/*", rateLimit<AppEnv>({ key: jsonField("username"), limit: 10, windowSec: 60 }));
// @ts-expect-error PLAN is "free" or "pro", never "team"
rateLimit<AppEnv>({ key: "k", limit: (c) => (c.env.PLAN === "team" ? 1 : 2), windowSec: 60 });

// createLimiter: (request, env, ctx), env typed by createLimiter<Env>; unknown, never any, without it.
type WorkerEnv = { PLAN: "free" | "pro" };
createLimiter<WorkerEnv>({
  key: userOfRequest((request, env) => {
    type _ = Expect<Equal<typeof request, Request>>;
    type __ = Expect<Equal<IsAny<typeof env>, false>>;
    return `${env.PLAN}:${request.headers.get("x-user")}`;
  }),
  limit: 10,
  windowSec: 60,
});
createLimiter({
  key: (request, env) => {
    type _ = Expect<Equal<typeof env, unknown>>;
    return request.url;
  },
  limit: 10,
  windowSec: 60,
});
