// A key helper for a claim of a **verified** JSON Web Token: verifiedClaim("sub", { ... }) keys a
// request by the token's `sub` only once WebCrypto has checked its signature (HS256, RS256 or ES256),
// its expiry, and its audience and issuer when given. A token that is absent, malformed, unsigned,
// signed by a key not configured, with an algorithm not allowed, expired, not yet valid, or for another
// audience has nothing to say: alone, such requests share the limiter's one "unknown" key, and in
// firstOf(verifiedClaim(...), ip()) they are counted by address. So no forged or stale token ever
// keys a budget of its own.
//
// Keys come from the options (`secret` for HS256, `keys`: public JWKs for RS256/ES256) or from a JWKS
// URL, fetched when first needed, kept for `jwksCacheMs`, fetched again for an unknown `kid` at most
// once per minute (a client sending random kids cannot make the Worker fetch on every request), and
// kept as they were when a fetch fails. Each key is bound to one algorithm by its type (an RSA key
// verifies RS256 only, an EC P-256 key ES256 only, the secret HS256 only): the token's header cannot
// make a public key serve as an HMAC secret. Verified tokens are remembered (at most 1,000, until
// they expire), so a client reusing its token costs one verification, not one per request.
import { SluiceConfigError, describe } from "../engine/errors.js";
import { escapePart, requestOf, textOf } from "./keys.js";

/** @import { KeyHelper, KeyInput } from "./keys.js" */

/**
 * @typedef {object} JwtOptions
 * @property {string} [secret] The HS256 secret (its UTF-8 bytes). Give it, or `secretBinding`, for HS256.
 * @property {string} [secretBinding] The name of the env binding (a Worker secret) holding the HS256 secret.
 * @property {readonly JsonWebKey[]} [keys] Public keys (RSA for RS256, EC P-256 for ES256) as JWKs; `kid` picks one.
 * @property {string} [jwksUrl] Where the public keys are published (a JWKS document: { keys: [...] }), https only.
 * @property {readonly ("HS256" | "RS256" | "ES256")[]} [algorithms] The algorithms accepted. Default: those the keys given allow.
 * @property {string | readonly string[]} [audience] The token's `aud` must name one of these.
 * @property {string} [issuer] The token's `iss` must be this.
 * @property {number} [clockToleranceSec] Leeway for exp and nbf, 0 to 300. Default 0.
 * @property {boolean} [requireExp] Refuse tokens without `exp`. Default true.
 * @property {string} [cookie] Read the token from this cookie instead of `Authorization: Bearer`.
 * @property {number} [jwksCacheMs] How long fetched keys are kept. Default 600,000 (10 minutes).
 * @property {(url: string) => Promise<Response>} [fetch] How the JWKS is fetched. Default: the global fetch.
 * @property {() => number} [clock] The time in ms, for exp and nbf. Default Date.now.
 */

const ALGORITHMS = Object.freeze({
  HS256: { import: { name: "HMAC", hash: "SHA-256" }, verify: { name: "HMAC" } },
  RS256: { import: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, verify: { name: "RSASSA-PKCS1-v1_5" } },
  ES256: { import: { name: "ECDSA", namedCurve: "P-256" }, verify: { name: "ECDSA", hash: "SHA-256" } },
});
const OPTION_FIELDS = ["secret", "secretBinding", "keys", "jwksUrl", "algorithms", "audience", "issuer", "clockToleranceSec", "requireExp", "cookie", "jwksCacheMs", "fetch", "clock"];
// Longer tokens are no one's login: refused before any parsing.
const MAX_TOKEN_LENGTH = 8192;
const MAX_REMEMBERED = 1000;
const REFETCH_UNKNOWN_KID_MS = 60_000;
const CLAIM = /^[A-Za-z0-9_.:-]{1,64}$/;
const BEARER = /^Bearer +([A-Za-z0-9_\-.]+) *$/i;
const encoder = new TextEncoder();

/**
 * verifiedClaim keys a request by `claim` of its verified JWT (a string or number claim; "sub" is
 * usual): `jwt-<claim>:<value>`. See the top of this module for what "verified" means.
 * @param {string} claim
 * @param {JwtOptions} options
 * @returns {KeyHelper}
 */
export function verifiedClaim(claim, options) {
  if (typeof claim !== "string" || !CLAIM.test(claim)) throw new SluiceConfigError("verifiedClaim(claim)", `must be a claim name; got ${describe(claim)}`);
  const verifier = createJwtVerifier(options);
  const label = `jwt-${claim}`;
  /** @param {KeyInput} input @param {...unknown} rest */
  return async function verifiedClaimKey(input, ...rest) {
    const env = envOf(input, rest);
    const payload = await verifier.verify(verifier.tokenOf(requestOf(input)), env);
    const value = payload === null ? undefined : typeof payload[claim] === "string" || typeof payload[claim] === "number" ? textOf(payload[claim]) : undefined;
    return value === undefined ? undefined : `${label}:${escapePart(value)}`;
  };
}

/**
 * createJwtVerifier validates `options` (a SluiceConfigError names the field) and returns
 * { tokenOf(request), verify(token, env) }: verify resolves to the token's payload, or null.
 * @param {JwtOptions} options
 */
export function createJwtVerifier(options) {
  if (options === null || typeof options !== "object") throw new SluiceConfigError("jwt", `must be an object of options; got ${describe(options)}`);
  for (const field of Object.keys(options)) if (!OPTION_FIELDS.includes(field)) throw new SluiceConfigError(`jwt.${field}`, `is not an option (known: ${OPTION_FIELDS.join(", ")})`);
  const { secret, secretBinding, keys, jwksUrl, audience, issuer, clockToleranceSec = 0, requireExp = true, jwksCacheMs = 600_000, clock = Date.now } = options;
  const fetchKeys = options.fetch ?? ((url) => fetch(url));
  if (secret !== undefined && (typeof secret !== "string" || secret.length < 32)) throw new SluiceConfigError("jwt.secret", "must be a string of at least 32 characters (an HS256 secret shorter than its hash can be guessed offline)");
  if (secretBinding !== undefined && (typeof secretBinding !== "string" || secretBinding === "")) throw new SluiceConfigError("jwt.secretBinding", `must be a binding name; got ${describe(secretBinding)}`);
  if (keys !== undefined && (!Array.isArray(keys) || keys.some((key) => key === null || typeof key !== "object"))) throw new SluiceConfigError("jwt.keys", "must be an array of JWKs");
  if (jwksUrl !== undefined && (typeof jwksUrl !== "string" || !/^https:\/\/[^/\s]+\//.test(jwksUrl))) throw new SluiceConfigError("jwt.jwksUrl", `must be an https:// URL; got ${describe(jwksUrl)}`);
  const symmetric = secret !== undefined || secretBinding !== undefined;
  const asymmetric = keys !== undefined || jwksUrl !== undefined;
  if (!symmetric && !asymmetric) throw new SluiceConfigError("jwt", "needs keys to verify with: secret or secretBinding (HS256), keys or jwksUrl (RS256, ES256)");
  const algorithms = options.algorithms ?? [...(symmetric ? ["HS256"] : []), ...(asymmetric ? ["RS256", "ES256"] : [])];
  if (!Array.isArray(algorithms) || algorithms.length === 0 || algorithms.some((alg) => !Object.hasOwn(ALGORITHMS, alg))) {
    throw new SluiceConfigError("jwt.algorithms", `must list some of HS256, RS256, ES256; got ${describe(algorithms)}`);
  }
  if (algorithms.includes("HS256") && !symmetric) throw new SluiceConfigError("jwt.algorithms", "HS256 needs secret or secretBinding");
  if (algorithms.some((alg) => alg !== "HS256") && !asymmetric) throw new SluiceConfigError("jwt.algorithms", "RS256 and ES256 need keys or jwksUrl");
  const audiences = audience === undefined ? null : Array.isArray(audience) ? audience : [audience];
  if (audiences !== null && (audiences.length === 0 || audiences.some((a) => typeof a !== "string" || a === ""))) throw new SluiceConfigError("jwt.audience", `must be a string or a list of them; got ${describe(audience)}`);
  if (issuer !== undefined && (typeof issuer !== "string" || issuer === "")) throw new SluiceConfigError("jwt.issuer", `must be a string; got ${describe(issuer)}`);
  if (typeof clockToleranceSec !== "number" || !(clockToleranceSec >= 0 && clockToleranceSec <= 300)) throw new SluiceConfigError("jwt.clockToleranceSec", `must be a number of seconds from 0 to 300; got ${describe(clockToleranceSec)}`);
  if (typeof requireExp !== "boolean") throw new SluiceConfigError("jwt.requireExp", `must be true or false; got ${describe(requireExp)}`);
  if (options.cookie !== undefined && (typeof options.cookie !== "string" || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/.test(options.cookie))) throw new SluiceConfigError("jwt.cookie", `must be a cookie name; got ${describe(options.cookie)}`);
  if (typeof jwksCacheMs !== "number" || !(jwksCacheMs >= 1000)) throw new SluiceConfigError("jwt.jwksCacheMs", `must be at least 1000 ms; got ${describe(jwksCacheMs)}`);

  /** @type {Map<string, { payload: any, untilMs: number, key: CryptoKey }>} */
  const remembered = new Map();
  /** @type {Map<string, Promise<CryptoKey | null>>} */
  const imported = new Map();
  let jwks = /** @type {{ keys: JsonWebKey[], fetchedAtMs: number, refetchAfterMs: number } | null} */ (null);
  /** @type {Promise<void> | null} */
  let fetching = null;

  /** The token of the request: Authorization: Bearer, or the configured cookie. @param {Request} request */
  function tokenOf(request) {
    if (options.cookie === undefined) return BEARER.exec(request.headers.get("authorization") ?? "")?.[1] ?? null;
    const found = (request.headers.get("cookie") ?? "").split(";").map((pair) => pair.trim()).filter((pair) => pair.startsWith(`${options.cookie}=`));
    return found.length === 1 ? found[0].slice(/** @type {string} */ (options.cookie).length + 1) : null;
  }

  /** The verified payload of `token`, or null. @param {string | null} token @param {any} env */
  async function verify(token, env) {
    if (token === null || token.length > MAX_TOKEN_LENGTH) return null;
    const nowMs = clock();
    const parts = token.split(".");
    if (parts.length !== 3) return null;
    const header = parseJson(parts[0]);
    if (header === null) return null;
    const alg = header.alg;
    if (typeof alg !== "string" || !algorithms.includes(/** @type {any} */ (alg)) || header.crit !== undefined) return null;
    const key = await keyFor(/** @type {keyof typeof ALGORITHMS} */ (alg), typeof header.kid === "string" ? header.kid : null, env, nowMs);
    if (key === null) return null;
    // A token verified before by this very key skips the signature check (claims are checked again).
    const known = remembered.get(token);
    if (known !== undefined && known.key === key) return known.untilMs > nowMs && claimsHold(known.payload, nowMs) ? known.payload : null;
    const payload = parseJson(parts[1]);
    const signature = decodeBase64Url(parts[2]);
    if (payload === null || signature === null) return null;
    const signed = encoder.encode(`${parts[0]}.${parts[1]}`);
    let valid = false;
    try {
      valid = await crypto.subtle.verify(ALGORITHMS[/** @type {keyof typeof ALGORITHMS} */ (alg)].verify, key, signature, signed);
    } catch {
      valid = false;
    }
    if (!valid || !claimsHold(payload, nowMs)) return null;
    if (remembered.size >= MAX_REMEMBERED) remembered.delete(/** @type {string} */ (remembered.keys().next().value));
    const untilMs = typeof payload.exp === "number" ? payload.exp * 1000 + clockToleranceSec * 1000 : nowMs + 60_000;
    remembered.set(token, { payload, untilMs, key });
    return payload;
  }

  /** exp, nbf, aud and iss. @param {any} payload @param {number} nowMs */
  function claimsHold(payload, nowMs) {
    const leeway = clockToleranceSec * 1000;
    if (payload.exp === undefined ? requireExp : typeof payload.exp !== "number" || payload.exp * 1000 + leeway <= nowMs) return false;
    if (payload.nbf !== undefined && (typeof payload.nbf !== "number" || payload.nbf * 1000 - leeway > nowMs)) return false;
    if (issuer !== undefined && payload.iss !== issuer) return false;
    if (audiences !== null) {
      const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
      if (!aud.some((/** @type {unknown} */ a) => typeof a === "string" && audiences.includes(a))) return false;
    }
    return true;
  }

  /**
   * The key that verifies `alg` (and `kid`), or null. Each key serves one algorithm: the secret HS256;
   * an RSA JWK RS256; an EC P-256 JWK ES256. A JWK that names another `alg` is not used.
   * @param {keyof typeof ALGORITHMS} alg @param {string | null} kid @param {any} env @param {number} nowMs
   */
  async function keyFor(alg, kid, env, nowMs) {
    if (alg === "HS256") {
      const material = secret ?? env?.[/** @type {string} */ (secretBinding)];
      if (typeof material !== "string" || material.length < 32) return null;
      return importOnce(`HS256\u0000${material}`, () => crypto.subtle.importKey("raw", encoder.encode(material), ALGORITHMS.HS256.import, false, ["verify"]));
    }
    const candidates = await publicKeys(nowMs, kid);
    const fits = (/** @type {JsonWebKey & { kid?: unknown }} */ jwk) => (kid === null || jwk.kid === kid) && (jwk.alg === undefined || jwk.alg === alg) && (alg === "RS256" ? jwk.kty === "RSA" : jwk.kty === "EC" && jwk.crv === "P-256");
    const jwk = candidates.find(fits);
    if (jwk === undefined) return null;
    const { d, p, q, dp, dq, qi, k, ...publicPart } = /** @type {any} */ (jwk); // never import private material
    return importOnce(`${alg}\u0000${JSON.stringify(publicPart)}`, () => crypto.subtle.importKey("jwk", { ...publicPart, key_ops: ["verify"], ext: true }, ALGORITHMS[alg].import, false, ["verify"]));
  }

  /** @param {string} id @param {() => Promise<CryptoKey>} load @returns {Promise<CryptoKey | null>} */
  function importOnce(id, load) {
    const known = imported.get(id);
    if (known !== undefined) return known;
    const pending = load().catch(() => null);
    imported.set(id, pending);
    return pending;
  }

  /** The configured keys and, with jwksUrl, the fetched ones. @param {number} nowMs @param {string | null} kid */
  async function publicKeys(nowMs, kid) {
    if (jwksUrl === undefined) return /** @type {JsonWebKey[]} */ (keys ?? []);
    const stale = jwks === null || nowMs - jwks.fetchedAtMs >= jwksCacheMs;
    const unknownKid = jwks !== null && kid !== null && !jwks.keys.some((key) => /** @type {any} */ (key).kid === kid) && nowMs >= jwks.refetchAfterMs;
    if (stale || unknownKid) {
      fetching ??= refresh(nowMs).finally(() => {
        fetching = null;
      });
      await fetching;
    }
    return [...(keys ?? []), ...(jwks?.keys ?? [])];
  }

  /** Fetches the JWKS; on failure the keys held stay (and none are tried again for a minute). @param {number} nowMs */
  async function refresh(nowMs) {
    try {
      const response = await fetchKeys(/** @type {string} */ (jwksUrl));
      const document = response.ok ? await response.json() : null;
      if (document === null || !Array.isArray(document.keys)) throw new Error("not a JWKS");
      jwks = { keys: document.keys.filter((/** @type {unknown} */ key) => key !== null && typeof key === "object").slice(0, 64), fetchedAtMs: nowMs, refetchAfterMs: nowMs + REFETCH_UNKNOWN_KID_MS };
    } catch {
      jwks = { keys: jwks?.keys ?? [], fetchedAtMs: nowMs, refetchAfterMs: nowMs + REFETCH_UNKNOWN_KID_MS };
    }
  }

  return { tokenOf, verify };
}

/** The env a key function was given: c.env in Hono, the second argument with createLimiter. @param {unknown} input @param {readonly unknown[]} rest @returns {unknown} */
function envOf(input, rest) {
  const honoEnv = /** @type {any} */ (input)?.env;
  return honoEnv !== undefined && /** @type {any} */ (input)?.req !== undefined ? honoEnv : rest[0];
}

/** @param {string} segment @returns {any} */
function parseJson(segment) {
  const bytes = decodeBase64Url(segment);
  if (bytes === null) return null;
  try {
    const value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** @param {string} segment @returns {Uint8Array | null} */
function decodeBase64Url(segment) {
  if (!/^[A-Za-z0-9_-]*$/.test(segment) || segment.length % 4 === 1) return null;
  const base64 = segment.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((segment.length + 3) % 4);
  try {
    const text = atob(base64);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return bytes;
  } catch {
    return null;
  }
}
