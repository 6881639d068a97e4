// Types of denial-cache.js.
import type { StoreCheck, StoreOutcome } from "./types.js";

export declare class DenialCache {
  constructor(maxKeys: number);
  readonly size: number;
  remember(checks: readonly StoreCheck[], outcome: StoreOutcome, nowMs: number): void;
  lookup(checks: readonly StoreCheck[], nowMs: number): StoreOutcome | null;
}
