// The --rule grammar (worker/cli/replay/rules.js): what each word means, and that every mistake names
// the rule and the word at fault.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { checkRuleNames, parseRule } from "../../worker/cli/replay/rules.js";

describe("--rule", () => {
  test("a key, a quota and the defaults", () => {
    const rule = parseRule("ip 100/60s", 0);
    assert.deepEqual(
      { name: rule.name, key: rule.key, limit: rule.limit, windowMs: rule.windowMs, algorithm: rule.algorithm, cost: rule.cost, countDenied: rule.countDenied, prefix: rule.prefix, methods: rule.methods },
      { name: "rule1", key: ["ip"], limit: 100, windowMs: 60_000, algorithm: "sliding-counter", cost: 1, countDenied: false, prefix: "/", methods: null },
    );
  });

  test("window units, and a unit alone meaning one of it", () => {
    const windows = ["10/500ms", "10/2s", "10/1m", "10/1h", "10/1d", "10/s"].map((quota) => parseRule(`ip ${quota}`, 0).windowMs);
    assert.deepEqual(windows, [500, 2000, 60_000, 3_600_000, 86_400_000, 1000]);
  });

  test("every option", () => {
    const rule = parseRule("user+apiKey:X-Api-Key 10/1m token-bucket burst=20 cost=3 name=checkout capacity=1000 prefix=/api/checkout/ methods=POST,PUT", 4);
    assert.deepEqual(rule.key, ["user", "apiKey:x-api-key"]);
    assert.equal(rule.algorithm, "token-bucket");
    assert.equal(rule.burst, 20);
    assert.equal(rule.cost, 3);
    assert.equal(rule.name, "checkout");
    assert.equal(rule.keyCapacity, 1000);
    assert.equal(rule.prefix, "/api/checkout");
    assert.deepEqual(rule.methods, ["POST", "PUT"]);
    assert.equal(parseRule("ip 10/1m sliding-counter count-denied", 0).countDenied, true);
  });

  test("each mistake names the rule and the word", () => {
    const cases = [
      ["ip", /--rule 3 \("ip"\): needs a key and a quota/],
      ["host 10/1m", /unknown key part "host"/],
      ["ip+ip 10/1m", /a key part appears twice/],
      ["ip 10 per minute", /"10" is not a quota like 100\/60s/],
      ["ip 10/1m fast", /unknown algorithm "fast"/],
      ["ip 10/1m burst=x", /"burst=x" has a bad value/],
      ["ip 10/1m cost=0", /"cost=0" has a bad value/],
      ["ip 10/1m prefix=api", /"prefix=api" has a bad value/],
      ["ip 10/1m methods=get", /"methods=get" has a bad value/],
      ["ip 10/1m cost=2 cost=3", /cost is given twice/],
      ["ip 10/1m colour=red", /unknown word "colour=red"/],
      ["ip 0/1m", /limit: /],
      ["ip 10/1m fixed-window count-denied", /countDenied: applies to sliding-counter only/],
    ];
    for (const [text, message] of cases) assert.throws(() => parseRule(text, 2), (error) => error.name === "ReplayUsageError" && message.test(error.message), text);
  });

  test("two rules may not share a name", () => {
    assert.throws(() => checkRuleNames([parseRule("ip 1/1s name=a", 0), parseRule("user 1/1s name=a", 1)]), /--rule 2: name "a" is already --rule 1's/);
  });
});
