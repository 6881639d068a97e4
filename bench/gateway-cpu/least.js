// The least a Worker does that keeps what issue 23 asks of the gateway for a small request and a 429,
// each in its cheapest form and with nothing of sluice in it: the yardstick that says whether the
// "+150 us" and "+50 us" floors can be met at all on this machine, and how much of the gateway's figure
// is sluice's own code. Everything here is a lower bound of the real guarantee, never more:
//   - the path refused when it holds what a canonical form must resolve (`%`, `//`, `/.`): one test,
//     where the gateway decodes and checks each segment;
//   - one counter per client address in a Map (a fixed window), where the gateway checks its rule in
//     the wasm core through its store chain;
//   - the rate-limit fields of the default "both" mode (five on an answer, eight on a 429 with its
//     content type, cache-control and Retry-After) and the 429's JSON body;
//   - the client's headers as a record without the hop-by-hop fields and the client's credential, the
//     upstream credential added;
//   - one timer bounding the head and the whole body (AbortSignal.timeout: the runtime's own);
//   - the body read whole into JavaScript and searched for each secret as it is (the gateway also
//     masks its encodings and any 12-byte fragment), each response header value searched the same way;
//   - the log record built and stringified (written nowhere, as gateway-cpu.js's gateway).
import { env } from "cloudflare:workers";

const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host"]);
const WINDOW_MS = 60_000;
const secrets = [env.UPSTREAM_TOKEN, env.SLUICE_ADMIN_TOKEN];
const secretBytes = secrets.map((s) => new TextEncoder().encode(s));

/** @type {Map<string, { window: number, count: number }>} */
const counters = new Map();
// The last log line, kept so that building it is not work a compiler could drop.
let lastLine = "";

/** @param {Uint8Array} bytes */
function holdsSecret(bytes) {
  for (const secret of secretBytes) {
    for (let at = bytes.indexOf(secret[0]); at !== -1 && at + secret.length <= bytes.length; at = bytes.indexOf(secret[0], at + 1)) {
      let i = 1;
      while (i < secret.length && bytes[at + i] === secret[i]) i++;
      if (i === secret.length) return true;
    }
  }
  return false;
}

/** @param {string} value */
const valueHoldsSecret = (value) => secrets.some((s) => value.includes(s));

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const path = url.pathname;
    const record = { event: "least.request", method: request.method, route: null, status: 0, decision: "none", upstreamStatus: null, error: null };
    if (path.includes("%") || path.includes("//") || path.includes("/.")) {
      record.status = 400;
      lastLine = JSON.stringify(record);
      return new Response('{"error":"bad path"}', { status: 400, headers: { "content-type": "application/json" } });
    }
    const limited = path.startsWith("/limited/");
    const limit = limited ? 1 : 1_000_000_000;
    record.route = limited ? "/limited" : "/api";
    const key = `${record.route}:${request.headers.get("cf-connecting-ip") ?? ""}`;
    const now = Date.now();
    const window = Math.floor(now / WINDOW_MS);
    let counter = counters.get(key);
    if (counter === undefined || counter.window !== window) counters.set(key, (counter = { window, count: 0 }));
    const allowed = counter.count < limit;
    if (allowed) counter.count++;
    const remaining = limit - counter.count;
    const reset = String(Math.ceil(((window + 1) * WINDOW_MS - now) / 1000));
    const policy = `"ip";q=${limit};w=60`;
    const rateFields = {
      "X-RateLimit-Limit": String(limit),
      "X-RateLimit-Remaining": String(remaining),
      "X-RateLimit-Reset": reset,
      "RateLimit-Policy": policy,
      RateLimit: `"ip";r=${remaining};t=${reset}`,
    };
    record.decision = allowed ? "admitted" : "denied";
    if (!allowed) {
      record.status = 429;
      lastLine = JSON.stringify(record);
      const body = JSON.stringify({ error: "too many requests", code: "rate_limited", retryAfter: Number(reset), limit, remaining, reset: Number(reset) });
      return new Response(body, { status: 429, headers: { "content-type": "application/json", "cache-control": "no-store", ...rateFields, "Retry-After": reset } });
    }
    /** @type {Record<string, string>} */
    const upstreamHeaders = {};
    request.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name) && name !== "authorization") upstreamHeaders[name] = value;
    });
    upstreamHeaders["x-upstream-token"] = env.UPSTREAM_TOKEN;
    const upstream = await fetch(`${env.UPSTREAM_ORIGIN}/api${path.slice(record.route.length)}${url.search}`, {
      method: request.method,
      headers: upstreamHeaders,
      redirect: "manual",
      signal: AbortSignal.timeout(30_000),
    });
    const bytes = new Uint8Array(await upstream.arrayBuffer());
    if (holdsSecret(bytes)) record.error = "masked";
    /** @type {Record<string, string>} */
    const headers = {};
    upstream.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name) && !valueHoldsSecret(value)) headers[name] = value;
    });
    Object.assign(headers, rateFields);
    record.status = upstream.status;
    record.upstreamStatus = upstream.status;
    lastLine = JSON.stringify(record);
    return new Response(bytes, { status: upstream.status, headers });
  },
};
