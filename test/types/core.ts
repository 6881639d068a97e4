// The loader of sluice.wasm (wasm-bindings/sluice.js): SluiceCore in a Worker, where the .wasm import
// is a WebAssembly.Module, and in Node, from the bytes.
import {
  ALGORITHMS,
  MAX_CHECKS_PER_CALL,
  SluiceCore,
  SluiceError,
  Status,
  type AlgorithmName,
  type CheckSpec,
  type Decision,
  type Outcome,
  type RuleSpec,
  type StatusCode,
  type TableStats,
} from "../../types/wasm-bindings/sluice.js";
import type { Equal, Expect } from "./assert.js";

declare const wasmModule: WebAssembly.Module;
declare const wasmBytes: Uint8Array;

const core = SluiceCore.instantiate(wasmModule);
const seeded = SluiceCore.instantiate(wasmModule, { seed: new Uint32Array([1, 2, 3, 4]) });

const spec: RuleSpec = { algorithm: "gcra", limit: 10, windowMs: 1_000, burst: 20, keyCapacity: 1_000 };
const rule: number = core.addRule(spec);
const login = core.addRule({ algorithm: "sliding-log", limit: 5, windowMs: 60_000, keyCapacity: 10_000 });

const decision: Decision = core.check(rule, "ip:192.0.2.1", 1, 1_700_000_000_000);
const peeked = core.peek(login, new TextEncoder().encode("user:alice"), 1, 1_700_000_000_000);
const checks: CheckSpec[] = [
  { rule, key: "ip:192.0.2.1" },
  { rule: login, key: "user:alice", cost: 2 },
];
const outcome: Outcome = core.checkAll(checks, 1_700_000_000_000, { peek: true });
const denying: Decision = outcome.checks[outcome.decidingCheck];
const state = core.exportState(rule, "ip:192.0.2.1");
if (state !== null) seeded.importState(rule, "ip:192.0.2.1", state);
core.reset(rule, "ip:192.0.2.1");
const stats: TableStats = core.stats(rule);
const sizes: [number, number, number] = [core.ruleCount, core.memoryBytes, stats.evictionsRestricting];
const names: readonly AlgorithmName[] = ALGORITHMS;
const most: 16 = MAX_CHECKS_PER_CALL;

async function inNode(): Promise<SluiceCore> {
  return SluiceCore.fromBytes(wasmBytes);
}

try {
  core.addRule({ algorithm: "token-bucket", limit: 0, windowMs: 1, keyCapacity: 1 });
} catch (error) {
  if (error instanceof SluiceError) {
    const status: StatusCode = error.status;
    const invalid: boolean = status === Status.INVALID_RULE;
    console.log(invalid, error.statusName, error.field);
  }
}
type _status = Expect<Equal<StatusCode, 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10>>;

// What the types refuse.
// @ts-expect-error an unknown algorithm
core.addRule({ algorithm: "sliding-window", limit: 1, windowMs: 1, keyCapacity: 1 });
// @ts-expect-error the core needs a key capacity (the host's options default it)
core.addRule({ algorithm: "gcra", limit: 1, windowMs: 1 });
// @ts-expect-error the core takes the window in milliseconds only
core.addRule({ algorithm: "gcra", limit: 1, windowSec: 1, keyCapacity: 1 });
// @ts-expect-error rules are numbered by addRule
core.check("gcra", "k", 1, 0);
// @ts-expect-error the time is a number of milliseconds
core.check(rule, "k", 1, new Date());
// @ts-expect-error Status is frozen
Status.OK = 1;
// @ts-expect-error a decision has retryAfterMs, not retryAfter
decision.retryAfter;

export { denying, inNode, most, names, peeked, sizes };

// sluice/core: the loader with the compiled module, as a library author instantiates it.
import { SluiceCore as PackagedCore, sluiceWasm } from "sluice/core";
const packaged: PackagedCore = PackagedCore.instantiate(sluiceWasm);
type _packagedModule = Expect<Equal<typeof sluiceWasm, WebAssembly.Module>>;
void packaged;
