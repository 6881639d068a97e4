// Types of denial-cache.js.
import type { StoreCheck, Outcome } from "./store.js";

export declare class DenialCache {
  constructor(maxKeys: number);
  readonly size: number;
  remember(checks: readonly StoreCheck[], outcome: Outcome, nowMs: number): void;
  lookup(checks: readonly StoreCheck[], nowMs: number): Outcome | null;
}
