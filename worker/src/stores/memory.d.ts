import type { IsolateTable, NormalizedRule, Outcome, Store, StoreCheck, TimedStoreOptions } from "./store.js";

/** The store that decides checks in the isolate's own sluice.wasm instance, synchronously, at options.nowMs. */
export interface MemoryStore extends Store {
  readonly name: "memory";
  decide(checks: readonly StoreCheck[], options: TimedStoreOptions): Outcome;
  /** The isolate's own table for `rule`. */
  isolateTables(rule: NormalizedRule): IsolateTable[];
}

export declare function createMemoryStore(): MemoryStore;
