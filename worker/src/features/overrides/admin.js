// The admin API of the live table of overrides (table-object.js), as a fetch handler an app mounts:
//
//   GET     the table: { version, overrides }
//   PUT     one override, a JSON body { key | prefix, limit }: { version } (400 naming the field if refused)
//   DELETE  one override, a JSON body { key | prefix }: { version }
//
// Every call needs `Authorization: Bearer <token>`, the token being the Worker secret `tokenSecret`
// names (at least 32 characters; without it every call is refused with 503: fail closed). Changes are
// audited by the object under `x-sluice-actor` (who, by their own word: the token says they may).
import { SluiceConfigError, describe } from "../../engine/errors.js";

const BEARER = /^Bearer +(\S+) *$/i;
const MIN_TOKEN_CHARS = 32;
const MAX_BODY_BYTES = 4096;

/** tokensEqual compares two tokens in time that depends on neither (both hashed first). @param {string} presented @param {string} expected @returns {Promise<boolean>} */
async function tokensEqual(presented, expected) {
  const encode = (/** @type {string} */ text) => crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  const [a, b] = (await Promise.all([encode(presented), encode(expected)])).map((d) => new Uint8Array(d));
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

const json = (/** @type {unknown} */ body, status = 200) => Response.json(body, { status, headers: { "cache-control": "no-store" } });

/**
 * overridesAdmin returns the admin API's fetch handler.
 * @param {{ binding?: string, name?: string, tokenSecret: string }} options binding and name as liveOverrides';
 *   tokenSecret: the env secret holding the admin token.
 * @returns {(request: Request, env: any) => Promise<Response>}
 */
export function overridesAdmin({ binding = "SLUICE_OVERRIDES", name = "overrides", tokenSecret } = /** @type {any} */ ({})) {
  if (typeof tokenSecret !== "string" || tokenSecret === "") throw new SluiceConfigError("tokenSecret", `must name the env secret holding the admin token; got ${describe(tokenSecret)}`);
  return async function overridesAdminHandler(request, env) {
    const expected = env?.[tokenSecret];
    if (typeof expected !== "string" || expected.length < MIN_TOKEN_CHARS) return json({ error: "admin token not configured" }, 503);
    const presented = BEARER.exec(request.headers.get("authorization") ?? "")?.[1];
    if (presented === undefined || !(await tokensEqual(presented, expected))) {
      return new Response(JSON.stringify({ error: "unauthorized" }), { status: 401, headers: { "www-authenticate": 'Bearer realm="sluice"', "content-type": "application/json" } });
    }
    const namespace = env?.[binding];
    if (namespace === undefined) return json({ error: `binding ${binding} missing` }, 503);
    const table = namespace.get(namespace.idFromName(name));
    if (request.method === "GET") return json(await table.list());
    if (request.method !== "PUT" && request.method !== "DELETE") return json({ error: "method not allowed" }, 405);
    const text = await request.text();
    if (text.length > MAX_BODY_BYTES) return json({ error: "body too large" }, 413);
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return json({ error: "body is not JSON" }, 400);
    }
    if (body === null || typeof body !== "object" || Array.isArray(body)) return json({ error: "body must be an object" }, 400);
    const actor = (request.headers.get("x-sluice-actor") ?? "unnamed").slice(0, 64);
    if (request.method === "PUT") {
      const result = await table.put({ ...(body.key !== undefined ? { key: body.key } : { prefix: body.prefix }), limit: body.limit }, actor);
      return result.ok ? json({ version: result.version }) : json({ error: result.problem, field: result.field }, 400);
    }
    if ((body.key === undefined) === (body.prefix === undefined)) return json({ error: "give exactly one of key and prefix", field: "key" }, 400);
    const result = await table.remove(body.key !== undefined ? { key: String(body.key) } : { prefix: String(body.prefix) }, actor);
    return json({ version: result.version });
  };
}
