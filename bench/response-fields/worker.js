// The Worker of bench/response-fields-cpu.js: one request builds `n` 429 Responses with the header
// record of `fields` (the bare Worker's 2 fields, or the gateway's 429 with its 8), so that what is
// measured is the Response constructor's share of a 429 and nothing else (the body is not read: a
// read is the same for both and costs more than the constructor, which would hide the difference).
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
  fetch(request) {
    const url = new URL(request.url);
    const record = RECORDS[/** @type {string} */ (url.searchParams.get("fields"))];
    const n = Number(url.searchParams.get("n"));
    let statuses = 0;
    for (let i = 0; i < n; i++) statuses += new Response(BODY, { status: 429, headers: record() }).status;
    return new Response(String(statuses));
  },
};
