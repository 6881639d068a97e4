import type { TableStats } from "../../wasm-bindings/sluice.js";

export interface IsolateStats {
  /** Instances created in this isolate (1 + replacements, once traffic arrived). */
  instancesCreated: number;
  /** Failures of an instance (a trap, memory exhausted). */
  instanceFailures: number;
  /** Checks the core refused (out of memory, say): the instance and its counters were kept. */
  refusedChecks: number;
  /** Instances thrown away after a failure; their counters were lost. */
  replacements: number;
  /** Requests checked, and of those denied. */
  decisions: number;
  denied: number;
  /** Requests let through by the dev bypass. */
  bypassed: number;
  /** The last failure's error, or null. */
  lastFailure: string | null;
  /** The live instance's linear memory. */
  memoryBytes: number;
  /** The rules registered in the live instance, with their key tables' statistics. */
  rules: Array<{ id: string } & (TableStats | { unavailable: true })>;
}

/** isolateStats reports this isolate's limiter counters. */
export declare function isolateStats(): IsolateStats;
