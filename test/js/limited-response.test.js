// A whole 429 as limitedResponse builds it: every header field (the rate-limit fields beside
// content-type and cache-control) and the JSON body, byte for byte.
import assert from "node:assert/strict";
import { test } from "node:test";

import { limitedResponse } from "../../worker/src/http/responses.js";

const rule = (name) => ({ name, limit: 10, windowMs: 60_000, burst: 0 });

test("a 429 carries its rate-limit fields beside content-type and cache-control, and its JSON body", async () => {
  const decision = /** @type {any} */ ({ allowed: false, limit: 5, remaining: 0, resetMs: 30_500, retryAfterMs: 12_001, decidingCheck: 0, store: "memory", rules: [rule("a")], checks: [{ allowed: false, limit: 5, remaining: 0, resetMs: 30_500, retryAfterMs: 12_001 }] });
  const response = limitedResponse(decision, { code: "sluice_rate_limited", problemJson: false, headers: "both", policy: '"a";q=5;w=60' });
  assert.equal(response.status, 429);
  assert.deepEqual([...response.headers], [
    ["cache-control", "no-store"],
    ["content-type", "application/json"],
    ["ratelimit", '"a";r=0;t=13'],
    ["ratelimit-policy", '"a";q=5;w=60'],
    ["retry-after", "13"],
    ["x-ratelimit-limit", "5"],
    ["x-ratelimit-remaining", "0"],
    ["x-ratelimit-reset", "31"],
  ]);
  assert.equal(await response.text(), '{"error":"too many requests","code":"sluice_rate_limited","retryAfter":13,"limit":5,"remaining":0,"reset":31}');
});
