// Types of rule-core.js.
import type { RuleSpec, SluiceCore } from "../../../wasm-bindings/sluice.js";
import type { NormalizedRule } from "./types.js";

export declare class RuleCore {
  constructor(specOf: (rule: NormalizedRule) => RuleSpec, createCore?: () => SluiceCore);
  readonly core: SluiceCore;
  /** Counts the cores created; a change means every key state was forgotten. */
  readonly generation: number;
  indicesOf(checks: ReadonlyArray<{ rule: NormalizedRule }>): number[];
}
