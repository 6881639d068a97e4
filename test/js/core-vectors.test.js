// Runs every shared vector of test/vectors/ (format: test/vectors/README.md) against sluice.wasm through
// its JS loader. test/cpp/vectors_test.cpp runs the same files against the native core, so the two
// provably agree. Run `bash scripts/build-wasm.sh` first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";

import { ALGORITHMS, SluiceCore, SluiceError } from "../../wasm-bindings/sluice.js";

const wasmBytes = readFileSync(new URL("../../wasm-bindings/sluice.wasm", import.meta.url));
const vectorsDir = new URL("../vectors/", import.meta.url);
const seed = new Uint32Array([1, 2, 3, 4]);

const files = readdirSync(vectorsDir)
  .filter((name) => name.endsWith(".json"))
  .sort();

test("the vectors directory holds a table for every algorithm and every operation", () => {
  for (const name of ["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "leaky-bucket", "gcra",
    "multi-rule", "peek", "reset", "export-import"]) {
    assert.ok(files.includes(`${name}.json`), `${name}.json is missing`);
  }
});

for (const file of files) {
  const document = JSON.parse(readFileSync(new URL(file, vectorsDir), "utf8"));
  for (const vector of document.vectors) {
    test(`${file}: ${vector.name}`, async () => {
      const core = await SluiceCore.fromBytes(wasmBytes, { seed });
      const runner = new VectorRunner(core, vector);
      vector.steps.forEach((step, index) => {
        const mismatches = runner.run(step);
        if (mismatches.length > 0) {
          // The first wrong step is reported; later ones would only repeat its consequences.
          assert.fail(`${file}: "${vector.name}", step ${index}: ${JSON.stringify(step)}\n    ${mismatches.join("\n    ")}`);
        }
      });
    });
  }
}

const retryText = (retryAfterMs) => (retryAfterMs === Infinity ? '"never"' : String(retryAfterMs));

class VectorRunner {
  #core;
  #vector;
  #rules;
  #saved = new Map();

  constructor(core, vector) {
    this.#core = core;
    this.#vector = vector;
    this.#rules = vector.rules.map((rule) => core.addRule(rule));
  }

  // run performs one step and returns what it got wrong, as "field: expected X, got Y".
  run(step) {
    const mismatches = [];
    const compare = (field, expected, got) => {
      if (expected !== got) mismatches.push(`${field}: expected ${expected}, got ${got}`);
    };
    const op = step.op ?? "check";
    if (op === "check" || op === "peek") {
      this.#decide(step, op === "peek", compare);
    } else if (op === "reset") {
      compare("status", step.status ?? "OK", this.#statusOf(() => this.#core.reset(this.#rule(step), this.#key(step))));
    } else if (op === "export") {
      this.#export(step, compare, mismatches);
    } else if (op === "import") {
      this.#import(step, compare);
    } else {
      mismatches.push(`unknown op ${op}`);
    }
    return mismatches;
  }

  #rule(step) {
    return this.#rules[step.rule ?? 0];
  }

  #key(step) {
    return step.key ?? this.#vector.key;
  }

  #decide(step, peek, compare) {
    const expectDecision = (what, decision, [allowed, remaining, reset, retryAfter]) => {
      compare(`${what}allowed`, allowed, decision.allowed);
      compare(`${what}remaining`, remaining, decision.remaining);
      compare(`${what}reset`, reset, decision.resetMs);
      compare(`${what}retryAfter`, JSON.stringify(retryAfter), retryText(decision.retryAfterMs));
    };
    let outcome;
    if (step.checks !== undefined) {
      const checks = step.checks.map(([rule, key, cost]) => ({ rule: this.#rules[rule], key, cost }));
      outcome = this.#core.checkAll(checks, step.now, { peek });
    } else {
      // The single-check calls, so that they are covered too.
      const call = peek ? this.#core.peek : this.#core.check;
      outcome = call.call(this.#core, this.#rule(step), this.#key(step), step.cost, step.now);
    }
    expectDecision("", outcome, [step.allowed, step.remaining, step.reset, step.retryAfter]);
    if (step.limit !== undefined) compare("limit", step.limit, outcome.limit);
    if (step.decidingCheck !== undefined) compare("decidingCheck", step.decidingCheck, outcome.decidingCheck);
    if (step.perCheck !== undefined) {
      compare("perCheck count", step.perCheck.length, outcome.checks.length);
      step.perCheck.forEach((expected, i) => expectDecision(`perCheck[${i}].`, outcome.checks[i], expected));
    }
  }

  #export(step, compare, mismatches) {
    const bytes = this.#core.exportState(this.#rule(step), this.#key(step));
    if (step.length === null) {
      if (bytes !== null) mismatches.push(`expected no state, got ${bytes.length} bytes`);
      return;
    }
    if (bytes === null) {
      mismatches.push(`expected ${step.length} bytes of state, got none`);
      return;
    }
    compare("length", step.length, bytes.length);
    compare("format byte", 1, bytes[0]);
    compare("algorithm byte", ALGORITHMS.indexOf(this.#vector.rules[step.rule].algorithm), bytes[1]);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    (step.words ?? []).forEach((word, i) => {
      if (16 + 8 * i <= bytes.length) compare(`words[${i}]`, BigInt(word), view.getBigInt64(8 + 8 * i, true));
    });
    if (step.as !== undefined) this.#saved.set(step.as, bytes);
  }

  #import(step, compare) {
    let bytes = step.from !== undefined ? this.#saved.get(step.from).slice() : fromHex(step.hex);
    if (step.truncate !== undefined) bytes = bytes.slice(0, step.truncate);
    if (step.setWords !== undefined) {
      const size = Math.max(bytes.length, 16 + 8 * step.setWords.length);
      const grown = new Uint8Array(size);
      grown.set(bytes);
      bytes = grown;
      const view = new DataView(bytes.buffer);
      step.setWords.forEach((word, i) => view.setBigInt64(8 + 8 * i, BigInt(word), true));
    }
    const status = this.#statusOf(() => this.#core.importState(this.#rule(step), this.#key(step), bytes));
    compare("status", step.status ?? "OK", status);
  }

  // The name of the status a call ended with: OK, or the statusName of the SluiceError it threw.
  #statusOf(call) {
    try {
      call();
      return "OK";
    } catch (error) {
      if (error instanceof SluiceError) return error.statusName;
      throw error;
    }
  }
}

function fromHex(hex) {
  const bytes = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}
