// The 429's body is written as text (responses.js limitedBodyText), not built as an object and
// stringified: it must be byte for byte what JSON.stringify gives, for every decision and code.
import assert from "node:assert/strict";
import { test } from "node:test";

import { decisionHeaderFields, decisionHeaders } from "../../worker/src/http/headers.js";
import { limitedBody, limitedBodyText, limitedResponse } from "../../worker/src/http/responses.js";

const rule = (name) => ({ name, limit: 10, windowMs: 60_000, burst: 0 });
const NUMBERS = [0, 1, 7, 59_999, 60_000, 1e21, 2 ** 53, Infinity, Number.NaN, -0, 0.5];
const CODES = ["sluice_rate_limited", 'quote " and \\ backslash', "caf\u00e9 \u2028 \u0001", 429, 0, -1.5];

/** @param {() => number} next */
function randomDecision(next) {
  const pick = (/** @type {readonly any[]} */ list) => list[Math.floor(next() * list.length)];
  const rules = [rule("a"), rule("b")].slice(0, 1 + Math.floor(next() * 2));
  return {
    allowed: false,
    limit: pick(NUMBERS),
    remaining: pick(NUMBERS),
    resetMs: pick(NUMBERS),
    retryAfterMs: pick(NUMBERS),
    decidingCheck: 0,
    store: pick(["memory", "durable", "none"]),
    ...(next() < 0.3 ? { fallback: { from: "durable", reason: "timeout" } } : {}),
    rules,
    checks: rules.map(() => (next() < 0.2 ? null : { allowed: next() < 0.5, limit: 10, remaining: 3, resetMs: 1500, retryAfterMs: 900 })),
  };
}

test("2000 random denials: the 429's body text is JSON.stringify of its body, for every code", () => {
  let seed = 23;
  const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  for (let n = 0; n < 2000; n++) {
    const decision = /** @type {any} */ (randomDecision(next));
    for (const code of CODES) {
      for (const problemJson of [false, true]) {
        const settings = { code, problemJson };
        assert.equal(limitedBodyText(decision, settings), JSON.stringify(limitedBody(decision, settings)), JSON.stringify({ n, code, problemJson }));
      }
    }
  }
});

test("the record of rate-limit fields holds decisionHeaders' pairs, in order, in every mode", () => {
  let seed = 7;
  const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  for (let n = 0; n < 500; n++) {
    const decision = /** @type {any} */ ({ ...randomDecision(next), allowed: next() < 0.5 });
    for (const mode of /** @type {const} */ (["legacy", "draft", "draft-6", "draft-7", "draft-8", "both", "none"])) {
      for (const epoch of [null, 1_700_000_000_000]) {
        const pairs = decisionHeaders(decision, mode, '"a";q=10;w=60', epoch);
        assert.deepEqual(Object.entries(decisionHeaderFields(decision, mode, '"a";q=10;w=60', epoch, {})), pairs);
        assert.equal(new Set(pairs.map(([name]) => name.toLowerCase())).size, pairs.length, "no field twice");
      }
    }
  }
});

test("a 429 carries its fields after content-type and cache-control, and the body as text", async () => {
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
