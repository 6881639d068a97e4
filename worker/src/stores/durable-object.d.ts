// Types of durable-object.js: the Durable Object that counts exactly (its client store: durable.d.ts).
import type { DurableObject } from "cloudflare:workers";
import type { Outcome } from "../../../wasm-bindings/sluice.js";
import type { StoreCheck } from "./store.js";

/** Takes back one charge of an undoable decide (a request spread over several objects). */
export interface UndoToken {
  rule: string;
  key: string;
  before: ArrayBuffer | null;
  beforeExpiresAtMs: number | null;
  after: ArrayBuffer;
}

export interface ObjectOutcome extends Outcome {
  /** Present when decide was called with `undoable` and charged. */
  undo?: UndoToken[];
}

/**
 * SluiceDurableObject counts keys exactly in its SQLite storage (bind it with a `new_sqlite_classes`
 * migration). Keys back to their full quota are swept by one alarm.
 */
export declare class SluiceDurableObject extends DurableObject {
  /** The object's clock (ms since the epoch); every decision is taken at this instant. */
  nowMs(): number;
  /** Decides every check of one request, all-or-nothing. */
  decide(checks: readonly StoreCheck[], options?: { peek?: boolean; undoable?: boolean }): ObjectOutcome;
  /** Takes back charges that nobody has built on since; returns how many. */
  undo(tokens: readonly UndoToken[]): number;
  alarm(): Promise<void>;
}
