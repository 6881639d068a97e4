// Configuration errors: every invalid option throws a SluiceConfigError naming it when the middleware
// or limiter is built. Runs under Node, importing the Worker's modules (the .wasm through a loader hook),
// since construction needs no request.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import "./helpers/node-wasm.js";

const { rateLimit, ip, apiKey, user, SluiceConfigError } = await import("../../worker/src/hono.js");
const { createLimiter } = await import("../../worker/src/sluice.js");
const { isolateTestHooks } = await import("../../worker/src/isolate.js");

// Each test starts from a fresh isolate state: rules declared by one test do not count against the next.
beforeEach(() => isolateTestHooks.reset());

const key = ip();
const valid = { key, limit: 10, windowSec: 60 };

// [what, options, the field the error must name]
const INVALID = [
  ["limit 0", { ...valid, limit: 0 }, "limit"],
  ["negative limit", { ...valid, limit: -3 }, "limit"],
  ["fractional limit", { ...valid, limit: 1.5 }, "limit"],
  ["NaN limit", { ...valid, limit: NaN }, "limit"],
  ["infinite limit", { ...valid, limit: Infinity }, "limit"],
  ["limit as text", { ...valid, limit: "10" }, "limit"],
  ["limit above 2^31", { ...valid, limit: 2 ** 31 + 1 }, "limit"],
  ["missing limit", { key, windowSec: 60 }, "limit"],
  ["zero window", { ...valid, windowSec: 0 }, "windowSec"],
  ["negative window", { ...valid, windowSec: -60 }, "windowSec"],
  ["NaN window", { ...valid, windowSec: NaN }, "windowSec"],
  ["sub-millisecond window", { ...valid, windowSec: 0.0001 }, "windowSec"],
  ["missing window", { key, limit: 10 }, "windowSec"],
  ["window beyond the core's range", { ...valid, windowSec: 1e8 }, "windowSec"],
  ["limit x window beyond the core's range", { ...valid, limit: 2 ** 31, windowSec: 2 ** 35 / 1000 }, "windowSec"],
  ["GCRA rate beyond the core's range", { key, algorithm: "gcra", limit: 2 ** 31, windowSec: 0.001 }, "limit"],
  ["unknown algorithm", { ...valid, algorithm: "sliding-window" }, "algorithm"],
  ["missing key", { limit: 10, windowSec: 60 }, "key"],
  ["key of the wrong type", { ...valid, key: 42 }, "key"],
  ["empty key", { ...valid, key: "" }, "key"],
  ["empty key list", { ...valid, key: [] }, "key"],
  ["bad key part", { ...valid, key: [ip(), null] }, "compose(...)[1]"],
  ["burst on a window", { ...valid, burst: 5 }, "burst"],
  ["zero burst", { ...valid, algorithm: "token-bucket", burst: 0 }, "burst"],
  ["NaN burst", { ...valid, algorithm: "token-bucket", burst: NaN }, "burst"],
  ["rate on a window", { key, rate: 2 }, "rate"],
  ["rate beside limit", { key, algorithm: "gcra", rate: 2, limit: 5 }, "limit"],
  ["negative rate", { key, algorithm: "gcra", rate: -1 }, "rate"],
  ["NaN rate", { key, algorithm: "gcra", rate: NaN }, "rate"],
  ["rate finer than 3 decimals", { key, algorithm: "gcra", rate: 0.0001 }, "rate"],
  ["name with the id separator", { ...valid, name: "a|b" }, "name"],
  ["name with a quote", { ...valid, name: 'say "hi"' }, "name"],
  ["empty name", { ...valid, name: "" }, "name"],
  ["overlong name", { ...valid, name: "n".repeat(65) }, "name"],
  ["zero cost", { ...valid, cost: 0 }, "cost"],
  ["fractional cost", { ...valid, cost: 1.5 }, "cost"],
  ["zero key capacity", { ...valid, keyCapacity: 0 }, "keyCapacity"],
  ["key capacity beyond a table's memory", { ...valid, algorithm: "sliding-log", limit: 1000, keyCapacity: 1_000_000 }, "keyCapacity"],
  ["sliding log too large for a default table", { ...valid, algorithm: "sliding-log", limit: 100_000 }, "limit"],
  ["unknown header mode", { ...valid, headers: "all" }, "headers"],
  ["problemJson not boolean", { ...valid, problemJson: "yes" }, "problemJson"],
  ["empty code", { ...valid, code: "" }, "code"],
  ["durable store (not yet)", { ...valid, store: "durable" }, "store"],
  ["kv store (not yet)", { ...valid, store: "kv" }, "store"],
  ["unknown store", { ...valid, store: "redis" }, "store"],
  ["bypass as text", { ...valid, bypass: "dev" }, "bypass"],
  ["empty bypass variable", { ...valid, bypass: { variable: "" } }, "bypass.variable"],
  ["bypass value not text", { ...valid, bypass: { value: 1 } }, "bypass.value"],
  ["unknown bypass option", { ...valid, bypass: { header: "x" } }, "bypass.header"],
  ["clock not a function", { ...valid, clock: 5 }, "clock"],
  ["skip not a function", { ...valid, skip: true }, "skip"],
  ["onLimited not a function", { ...valid, onLimited: "429" }, "onLimited"],
  ["unknown option", { ...valid, window: 60 }, "window"],
  ["empty rules", { key, rules: [] }, "rules"],
  ["too many rules", { key, rules: Array.from({ length: 17 }, (_, i) => ({ name: `r${i}`, limit: 1, windowSec: 1 })) }, "rules"],
  ["limit beside rules", { key, limit: 5, rules: [{ limit: 1, windowSec: 1 }] }, "limit"],
  ["rule not an object", { key, rules: [5] }, "rules[0]"],
  ["invalid limit in the second rule", { key, rules: [{ limit: 1, windowSec: 1 }, { limit: 0, windowSec: 1 }] }, "rules[1].limit"],
  ["unknown field in a rule", { key, rules: [{ limit: 1, windowSec: 1, window: 1 }] }, "rules[0].window"],
  ["two rules with one name", { key, rules: [{ name: "x", limit: 1, windowSec: 1 }, { name: "x", limit: 2, windowSec: 1 }] }, "rules[1].name"],
];

for (const [what, options, field] of INVALID) {
  test(`rateLimit refuses ${what}, naming ${field}`, () => {
    assert.throws(
      () => rateLimit(options),
      (error) => {
        assert.ok(error instanceof SluiceConfigError, `${what}: ${error}`);
        assert.equal(error.field, field, `${what}: ${error.message}`);
        assert.ok(error.message.includes(field), error.message);
        return true;
      },
    );
  });
}

test("createLimiter refuses the same mistakes, and onLimited (build the response yourself)", () => {
  for (const [what, options, field] of INVALID) {
    if (field === "onLimited") continue;
    assert.throws(() => createLimiter(options), (error) => error instanceof SluiceConfigError && error.field === field, what);
  }
  assert.throws(() => createLimiter({ ...valid, onLimited: () => undefined }), (error) => error.field === "onLimited");
});

test("key helpers refuse their own bad options when built", () => {
  const cases = [
    [() => ip({ ipv6Prefix: 0 }), "ip({ ipv6Prefix })"],
    [() => ip({ ipv6Prefix: 129 }), "ip({ ipv6Prefix })"],
    [() => ip({ ipv6Prefix: 64.5 }), "ip({ ipv6Prefix })"],
    [() => ip({ trustForwardedFor: "yes" }), "ip({ trustForwardedFor })"],
    [() => apiKey("bad header"), "apiKey(header)"],
    [() => user("alice"), "user(identify)"],
  ];
  for (const [build, field] of cases) {
    assert.throws(build, (error) => error instanceof SluiceConfigError && error.field === field, field);
  }
});

test("the refusal of a store not available yet says why and what to use", () => {
  assert.throws(() => rateLimit({ ...valid, store: "durable" }), /not available yet.*store: 'memory'/);
  assert.throws(() => rateLimit({ ...valid, store: "kv" }), /not available yet.*store: 'memory'/);
});

test("the seeds' usage is accepted unchanged: rateLimit({ key, limit, windowSec, code? })", () => {
  assert.equal(typeof rateLimit({ key: (c) => c.req.header("cf-connecting-ip"), limit: 10, windowSec: 60 }), "function");
  assert.equal(typeof rateLimit({ key: "global", limit: 1000, windowSec: 1, code: "GLOBAL_LIMIT" }), "function");
  assert.equal(typeof rateLimit({ key, rate: 2.5, algorithm: "token-bucket" }), "function");
  assert.equal(typeof rateLimit({ key, limit: 3, windowSec: 0.5, algorithm: "leaky-bucket", burst: 6 }), "function");
});

test("rules sharing an id must agree on their table's size", () => {
  rateLimit({ ...valid, name: "same", keyCapacity: 1000 });
  rateLimit({ ...valid, name: "same", keyCapacity: 1000 });
  assert.throws(() => rateLimit({ ...valid, name: "same", keyCapacity: 2000 }), (error) => error.field === "keyCapacity" && /1000/.test(error.message));
});

test("an isolate's rules must fit its instance: at most 64 of them, within the memory budget", () => {
  for (let i = 0; i < 64; i++) rateLimit({ ...valid, name: `small-${i}`, keyCapacity: 10 });
  assert.throws(() => rateLimit({ ...valid, name: "small-64", keyCapacity: 10 }), (error) => error.field === "keyCapacity" && /at most 64/.test(error.message));

  isolateTestHooks.reset();
  rateLimit({ ...valid, name: "big-1", algorithm: "fixed-window", keyCapacity: 1_200_000 });
  assert.throws(
    () => rateLimit({ ...valid, name: "big-2", algorithm: "fixed-window", keyCapacity: 1_200_000 }),
    (error) => error.field === "keyCapacity" && /MiB/.test(error.message),
  );
});

test("default key capacity keeps a sliding log's table bounded", async () => {
  const { normalizeOptions, DEFAULT_KEY_CAPACITY, DEFAULT_TABLE_BYTES } = await import("../../worker/src/options.js");
  const { tableBytes } = await import("../../worker/src/isolate.js");
  const counter = normalizeOptions({ ...valid, algorithm: "sliding-counter" }, "hono").rules[0];
  assert.equal(counter.keyCapacity, DEFAULT_KEY_CAPACITY);
  const log = normalizeOptions({ ...valid, name: "log", algorithm: "sliding-log", limit: 1000 }, "hono").rules[0];
  assert.ok(log.keyCapacity < DEFAULT_KEY_CAPACITY, `${log.keyCapacity}`);
  assert.ok(tableBytes("sliding-log", 1000, log.keyCapacity) <= DEFAULT_TABLE_BYTES);
  assert.equal(log.id, "log|sliding-log|1000|60000|0");
});
