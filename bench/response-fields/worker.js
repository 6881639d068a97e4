// The Worker of bench/response-fields-cpu.js: one request builds `n` 429 Responses with the header
// record of `fields` (the bare Worker's 2 fields, or the gateway's 429 with its 8) and reads each one's
// body, so that what is measured is the Response constructor's share of a 429 and nothing else.
const BODY = '{"error":"too many requests","code":"sluice_rate_limited","retryAfter":60,"limit":1,"remaining":0,"reset":3600}';

/** @type {Record<string, () => Record<string, string>>} */
const RECORDS = {
  // bench/gateway-cpu/bare.js's constant 429.
  2: () => ({ "content-type": "application/json", "retry-after": "60" }),
  // The gateway's 429 under the default `responses.headers: "both"` (responses.js limitedResponse).
  8: () => ({
    "content-type": "application/json",
    "cache-control": "no-store",
    "X-RateLimit-Limit": "1",
    "X-RateLimit-Remaining": "0",
    "X-RateLimit-Reset": "3600",
    "RateLimit-Policy": '"limited";q=1;w=3600',
    RateLimit: '"limited";r=0;t=3600',
    "Retry-After": "3600",
  }),
};

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const record = RECORDS[/** @type {string} */ (url.searchParams.get("fields"))];
    const n = Number(url.searchParams.get("n"));
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      const response = new Response(BODY, { status: 429, headers: record() });
      bytes += (await response.arrayBuffer()).byteLength;
    }
    return new Response(String(bytes));
  },
};
