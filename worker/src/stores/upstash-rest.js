// A minimal client for the Upstash REST protocol: one Redis command per HTTP POST to the database's
// URL, the command as a JSON array (["EVALSHA", sha, "1", key, ...]), the reply as {"result": ...} or
// {"error": "..."}, authorized by "Authorization: Bearer <token>".
//
// Why not @upstash/redis: sluice sends two commands (EVALSHA, and EVAL when the script is not loaded),
// and that client weighs about 76 KB minified (18 KB gzipped) — more than the rest of sluice's
// runtime; it retries failed requests five times with backoff by default (a limiter would rather fall
// back); and a request aborted by its signal resolves with the result "Aborted" instead of rejecting,
// which a limiter must never read as an answer. This module is ~100 lines and rejects on every failure.
//
// The token is a secret: it goes in the Authorization header of requests to the database and nowhere
// else. Error messages are built from the server's reply with every occurrence of the token removed (a
// proxy that echoes the request back must not leak it into logs or responses).

/** RedisReplyError is an error reply from Redis (through the REST endpoint), e.g. NOSCRIPT. */
export class RedisReplyError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "RedisReplyError";
  }
}

/**
 * @typedef {object} UpstashRestClient
 * @property {(command: Array<string | number>, signal?: AbortSignal) => Promise<unknown>} send
 *   Sends one command; resolves with its result, rejects with RedisReplyError or an Error.
 * @property {(script: string, sha: string, keys: string[], args: Array<string | number>, signal?: AbortSignal) => Promise<unknown>} evalScript
 *   EVALSHA, and EVAL when Redis answers NOSCRIPT (the script is then loaded for the next call).
 */

/**
 * createUpstashRestClient returns a client for the database at `url` with `token`.
 * `fetch` is the fetch function to use (default: globalThis.fetch); `onRoundTrip` is called once per
 * HTTP request sent.
 * @param {{ url: string, token: string, fetch?: typeof fetch, onRoundTrip?: () => void }} options
 * @returns {UpstashRestClient}
 */
export function createUpstashRestClient({ url, token, fetch: fetchFn = globalThis.fetch, onRoundTrip = () => {} }) {
  const endpoint = url.endsWith("/") ? url.slice(0, -1) : url;
  const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
  /** @param {string} text */
  const redact = (text) => (token === "" ? text : text.split(token).join("[token]"));

  /**
   * @param {Array<string | number>} command
   * @param {AbortSignal} [signal]
   * @returns {Promise<unknown>}
   */
  async function send(command, signal) {
    onRoundTrip();
    let response;
    try {
      response = await fetchFn(endpoint, { method: "POST", headers, body: JSON.stringify(command), signal });
    } catch (error) {
      throw new Error(`redis: request failed: ${redact(error instanceof Error ? error.message : String(error))}`);
    }
    const text = await response.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error(`redis: HTTP ${response.status}, not a JSON reply: ${redact(text.slice(0, 200))}`);
    }
    if (body !== null && typeof body === "object" && typeof body.error === "string") {
      throw new RedisReplyError(`redis: ${redact(body.error)}`);
    }
    if (!response.ok || body === null || typeof body !== "object" || !("result" in body)) {
      throw new Error(`redis: HTTP ${response.status}: ${redact(text.slice(0, 200))}`);
    }
    return body.result;
  }

  /**
   * @param {string} script
   * @param {string} sha
   * @param {string[]} keys
   * @param {Array<string | number>} args
   * @param {AbortSignal} [signal]
   * @returns {Promise<unknown>}
   */
  async function evalScript(script, sha, keys, args, signal) {
    try {
      return await send(["EVALSHA", sha, keys.length, ...keys, ...args], signal);
    } catch (error) {
      if (!(error instanceof RedisReplyError) || !error.message.includes("NOSCRIPT")) throw error;
      return send(["EVAL", script, keys.length, ...keys, ...args], signal);
    }
  }

  return { send, evalScript };
}

/**
 * sha1Hex is the hex SHA-1 of `text` (the name EVALSHA knows a script by).
 * @param {string} text
 * @returns {Promise<string>}
 */
export async function sha1Hex(text) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-1", new TextEncoder().encode(text)));
  let hex = "";
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
