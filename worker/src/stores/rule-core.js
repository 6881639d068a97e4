// A RuleTable (rule-table.js) of SluiceCores: the cores of each Durable Object, each KV store's views
// and the Redis store, which lend, export and import state as well as decide.
// #sluice-wasm is the compiled core, found the way this runtime can load it (package.json "imports").
import sluiceWasm from "#sluice-wasm";
import { SluiceCore } from "../../../wasm-bindings/sluice.js";
import { RuleTable } from "./rule-table.js";

/** @import { RuleSpec } from "../../../wasm-bindings/sluice.js" */
/** @import { NormalizedRule } from "./store.js" */

export { MAX_RULES } from "./rule-table.js";

/**
 * RuleCore maps normalized rules to rule indices of one SluiceCore, created on first use.
 * @extends {RuleTable<SluiceCore>}
 */
export class RuleCore extends RuleTable {
  /**
   * @param {(rule: NormalizedRule) => RuleSpec} specOf
   * @param {() => SluiceCore} [createCore]
   */
  constructor(specOf, createCore = () => SluiceCore.instantiate(sluiceWasm)) {
    super(specOf, createCore);
  }
}
