// Account lockout as a TypeScript Worker uses it.
import { Hono } from "hono";
import { createLockout, jsonField, normalizeAccount } from "sluice";
import type { LockoutAttempt } from "sluice";
import { lockout } from "sluice/hono";

const app = new Hono();
app.post("/login", lockout({ key: jsonField("username"), backoff: true, account: { maxFailures: 30 } }), (c) => {
  const attempt: LockoutAttempt | undefined = c.get("lockout");
  attempt?.fail();
  // @ts-expect-error undefined on a route without the middleware
  c.get("lockout").succeed();
  return c.json({ ok: false }, 401);
});
// @ts-expect-error the account key is required
lockout({ maxFailures: 5 });
// @ts-expect-error KV is no store for lockout
lockout({ key: jsonField("username"), store: "kv" });

const guard = createLockout({ key: jsonField("username", { maxBytes: 4096 }), normalize: (name) => normalizeAccount(name).replace(/\+.*@/, "@") });
export async function handle(request: Request): Promise<Response> {
  const attempt = await guard.check(request);
  if (!attempt.allowed) return guard.refusedResponse(attempt);
  const response = new Response("ok");
  const settled = await guard.settle(attempt, response);
  const locked: Array<"client" | "account"> = settled.locked;
  return locked.length > 0 ? response : response;
}
