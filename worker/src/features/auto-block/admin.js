// The admin API of auto-blocking, as a fetch handler an app mounts beside its limiters:
//
//   GET     the blocks in force: { blocks: [{ rule, key, untilMs }] } (on the durable and Redis stores the
//           deployment's, whichever isolate started them; on memory this isolate's)
//   DELETE  lift one, a JSON body { rule, key }: { lifted: true }, or 404 when no auto-blocking rule has that name
//
// Every call needs `Authorization: Bearer <token>`, the token being the Worker secret `tokenSecret`
// names (at least 32 characters; without it every call is refused with 503: fail closed). A lift is
// logged (`sluice.block.lift`) with the rule, the actor (`x-sluice-actor`) and a fingerprint of the
// key: a key may be an API key, so it never reaches a log.
import { SluiceConfigError, describe } from "../../engine/errors.js";
import { adminAuthRefusal, adminJson, fingerprint } from "../../http/admin-auth.js";

const MAX_BODY_BYTES = 4096;

/**
 * blocksAdmin returns the admin API's fetch handler over `limiters` (each a createLimiter() or a
 * rateLimit() middleware, with auto-blocking rules).
 * @param {{ limiters: ReadonlyArray<{ blocks: import("../../engine/limiter.js").LimiterBlocks }>, tokenSecret: string, log?: (line: string) => void }} options
 *   tokenSecret: the env secret holding the admin token; log: where the audit line goes (default console.log).
 * @returns {(request: Request, env?: any, ctx?: any) => Promise<Response>}
 */
export function blocksAdmin({ limiters, tokenSecret, log = (line) => console.log(line) } = /** @type {any} */ ({})) {
  if (typeof tokenSecret !== "string" || tokenSecret === "") throw new SluiceConfigError("tokenSecret", `must name the env secret holding the admin token; got ${describe(tokenSecret)}`);
  if (!Array.isArray(limiters) || limiters.length === 0 || !limiters.every((l) => typeof l?.blocks?.lift === "function")) {
    throw new SluiceConfigError("limiters", `must list the limiters (or rateLimit middlewares) whose blocks it serves; got ${describe(limiters)}`);
  }
  return async function blocksAdminHandler(request, env, ctx) {
    const refusal = await adminAuthRefusal(request, env, tokenSecret);
    if (refusal !== null) return refusal;
    if (request.method === "GET") return adminJson({ blocks: await listBlocks(limiters, env) });
    if (request.method !== "DELETE") return adminJson({ error: "method not allowed" }, 405);
    const text = await request.text();
    if (text.length > MAX_BODY_BYTES) return adminJson({ error: "body too large" }, 413);
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return adminJson({ error: "body is not JSON" }, 400);
    }
    for (const field of ["rule", "key"]) {
      if (typeof body?.[field] !== "string" || body[field] === "") return adminJson({ error: `${field} must be a non-empty string`, field }, 400);
    }
    let lifted = false;
    for (const limiter of limiters) lifted = (await limiter.blocks.lift(body.rule, body.key, env, ctx)) || lifted;
    if (!lifted) return adminJson({ error: "no auto-blocking rule of that name", field: "rule" }, 404);
    const actor = (request.headers.get("x-sluice-actor") ?? "unnamed").slice(0, 64);
    log(JSON.stringify({ event: "sluice.block.lift", at: Date.now(), actor, rule: body.rule.slice(0, 64), fingerprint: await fingerprint(body.key) }));
    return adminJson({ lifted: true });
  };
}

/**
 * The blocks of `limiters`, each (rule, key) once (limiters may share a rule and a store), ending soonest first.
 * @param {ReadonlyArray<{ blocks: import("../../engine/limiter.js").LimiterBlocks }>} limiters
 * @param {unknown} env
 */
export async function listBlocks(limiters, env) {
  /** @type {Map<string, import("./auto-block.js").BlockEntry>} */
  const merged = new Map();
  for (const lists of await Promise.all(limiters.map((limiter) => limiter.blocks.list(env)))) {
    for (const entry of lists) {
      const id = `${entry.rule}\u0000${entry.key}`;
      const known = merged.get(id);
      if (known === undefined || known.untilMs < entry.untilMs) merged.set(id, entry);
    }
  }
  return [...merged.values()].sort((a, b) => a.untilMs - b.untilMs);
}
