// Types of rule-core.js.
import type { RuleSpec, SluiceCore } from "../../../wasm-bindings/sluice.js";
import type { NormalizedRule } from "./store.js";

/** The most rules one core holds. */
export declare const MAX_RULES: 64;

export declare class RuleCore {
  constructor(specOf: (rule: NormalizedRule) => RuleSpec, createCore?: () => SluiceCore);
  /** The current core, created on first use. */
  readonly core: SluiceCore;
  /** Whether a core exists (without creating one). */
  readonly live: boolean;
  /** Counts the cores dropped; a change means every key state was forgotten. */
  readonly generation: number;
  /** [rule id, index] of the rules registered in the current core. */
  registered(): IterableIterator<[string, number]>;
  indicesOf(checks: ReadonlyArray<{ rule: NormalizedRule }>): number[];
  /** Drops the core and its rules; the next use creates a fresh one. */
  discard(): void;
}
