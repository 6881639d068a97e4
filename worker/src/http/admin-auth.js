// What the library's admin APIs (overridesAdmin, blocksAdmin) share: the bearer token check, failing
// closed, their JSON answers, and the fingerprint that stands for a key in their audit logs.

const BEARER = /^Bearer +(\S+) *$/i;
/** A shorter admin token is refused (every call answered 503): 32 random characters resist guessing. */
export const MIN_TOKEN_CHARS = 32;

/** tokensEqual compares two tokens in time that depends on neither (both hashed first). @param {string} presented @param {string} expected @returns {Promise<boolean>} */
export async function tokensEqual(presented, expected) {
  const encode = (/** @type {string} */ text) => crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  const [a, b] = (await Promise.all([encode(presented), encode(expected)])).map((d) => new Uint8Array(d));
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

/** adminJson is an admin API's answer: JSON, never cached. @param {unknown} body @param {number} [status] */
export const adminJson = (body, status = 200) => Response.json(body, { status, headers: { "cache-control": "no-store" } });

/**
 * adminAuthRefusal is the answer refusing `request` (503 without a configured token, 401 without the
 * right one), or null when it carries the token the env secret `tokenSecret` holds.
 * @param {Request} request @param {any} env @param {string} tokenSecret
 * @returns {Promise<Response | null>}
 */
export async function adminAuthRefusal(request, env, tokenSecret) {
  const expected = env?.[tokenSecret];
  if (typeof expected !== "string" || expected.length < MIN_TOKEN_CHARS) return adminJson({ error: "admin token not configured" }, 503);
  const presented = BEARER.exec(request.headers.get("authorization") ?? "")?.[1];
  if (presented === undefined || !(await tokensEqual(presented, expected))) {
    return new Response(JSON.stringify({ error: "unauthorized" }), { status: 401, headers: { "www-authenticate": 'Bearer realm="sluice"', "content-type": "application/json" } });
  }
  return null;
}

/** fingerprint is the first 16 hex digits of SHA-256(text): enough to tell keys apart, nothing to reuse. @param {string} text @returns {Promise<string>} */
export async function fingerprint(text) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return [...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
