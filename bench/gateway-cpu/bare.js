// The thinnest Worker in front of the same upstream: it forwards the request with fetch() and returns
// the response as it is. Its /limited path answers a constant 429, the floor of the gateway's 429 path.
import { env } from "cloudflare:workers";

const LIMITED = JSON.stringify({ error: "rate_limited", retryAfter: 60 });

export default {
  fetch(request) {
    const url = new URL(request.url);
    if (url.pathname.endsWith("/limited")) {
      return new Response(LIMITED, { status: 429, headers: { "content-type": "application/json", "retry-after": "60" } });
    }
    return fetch(`${env.UPSTREAM_ORIGIN}${url.pathname}${url.search}`, request);
  },
};
