// Types of durable-object.js: the Durable Object that counts exactly, and its client store.
import type { DurableObject } from "cloudflare:workers";
import type { Outcome } from "../../../wasm-bindings/sluice.js";
import type { Store, StoreCheck } from "./types.js";

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

export interface DurableStoreOptions {
  /** The namespace bound to SluiceDurableObject, or its binding name in env. */
  binding: DurableObjectNamespace | string;
  /** How many objects share the keys (by a hash of the key), or "key" for one object per key. Default 1. */
  shards?: number | "key";
  /** Prefix of the objects' names. Default "sluice". */
  name?: string;
  /** Reject with DeadlineError after this many ms. Default: wait. */
  timeoutMs?: number;
}

export interface DurableStoreCounters {
  /** Requests whose keys lived in more than one object. */
  spreadRequests: number;
  /** Charges taken back because another object denied the request. */
  undone: number;
  /** Charges that could not be taken back. */
  undoMissed: number;
}

export interface DurableStore extends Store {
  readonly name: "durable";
  readonly counters: Readonly<DurableStoreCounters>;
}

export declare function createDurableStore(options: DurableStoreOptions): DurableStore;
