// The dashboard's session: after a login with the admin token, the browser holds a cookie that proves
// it, and never the token itself. The cookie is `<expiry>.<MAC>`, the MAC an HMAC-SHA-256 of the
// expiry under a key derived from the token, so:
//  - no script can read it (HttpOnly), no other site can send it (SameSite=Strict) and it travels only
//    over HTTPS or to localhost (Secure, and the __Host- prefix pins it to this host and path /);
//  - it is worth nothing without the token, expires by itself, and changing the token ends every session;
//  - the Worker keeps no session table.
// State-changing requests (login, logout) must also come from this origin (sameOrigin below), so a
// cross-site form cannot log a victim in as the attacker or out.

export const SESSION_COOKIE = "__Host-sluice-dashboard";
/** How long a session lasts. */
export const SESSION_MS = 8 * 3600_000;
const LABEL = "sluice dashboard session v1";
const encoder = new TextEncoder();

/** @param {string} token @returns {Promise<CryptoKey>} */
async function macKey(token) {
  const derived = await crypto.subtle.digest("SHA-256", encoder.encode(`${LABEL}\u0000${token}`));
  return crypto.subtle.importKey("raw", derived, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

const hex = (/** @type {ArrayBuffer} */ bytes) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");

/**
 * The Set-Cookie value of a new session for `token`, valid until nowMs + SESSION_MS.
 * @param {string} token @param {number} nowMs @returns {Promise<string>}
 */
export async function newSessionCookie(token, nowMs) {
  const expires = String(Math.floor((nowMs + SESSION_MS) / 1000));
  const mac = hex(await crypto.subtle.sign("HMAC", await macKey(token), encoder.encode(expires)));
  return `${SESSION_COOKIE}=${expires}.${mac}; Path=/; Max-Age=${SESSION_MS / 1000}; HttpOnly; Secure; SameSite=Strict`;
}

/** The Set-Cookie value that ends the session. */
export const CLEARED_COOKIE = `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict`;

/**
 * Whether `request` carries a session cookie valid for `token` at nowMs. The MAC is checked by
 * WebCrypto's verify, which compares in constant time.
 * @param {Request} request @param {string} token @param {number} nowMs @returns {Promise<boolean>}
 */
export async function hasSession(request, token, nowMs) {
  const value = cookie(request.headers.get("cookie") ?? "", SESSION_COOKIE);
  const match = value === null ? null : /^(\d{1,12})\.([0-9a-f]{64})$/.exec(value);
  if (match === null || Number(match[1]) * 1000 <= nowMs) return false;
  const mac = new Uint8Array(32);
  for (let i = 0; i < 32; i++) mac[i] = parseInt(match[2].slice(2 * i, 2 * i + 2), 16);
  return crypto.subtle.verify("HMAC", await macKey(token), mac, encoder.encode(match[1]));
}

/**
 * Whether a state-changing request comes from the dashboard's own origin: the browser's
 * Sec-Fetch-Site says same-origin, or (older browsers) its Origin is the request's own. A request
 * with neither is refused: browsers send at least one of them on a form POST.
 * @param {Request} request @returns {boolean}
 */
export function sameOrigin(request) {
  const site = request.headers.get("sec-fetch-site");
  if (site !== null) return site === "same-origin";
  const origin = request.headers.get("origin");
  return origin !== null && origin === new URL(request.url).origin;
}

/** The value of cookie `name` in a Cookie header, or null (the first one, as browsers send the most specific first). @param {string} header @param {string} name @returns {string | null} */
function cookie(header, name) {
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
