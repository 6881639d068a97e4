// Types of durable.js: the store that decides in SluiceDurableObject instances.
import type { SluiceDurableObject } from "./durable-object.js";
import type { Store } from "./store.js";

export interface DurableStoreOptions {
  /**
   * The namespace bound to SluiceDurableObject (typed for it, as `wrangler types` writes it, or
   * untyped), or its binding name in env.
   */
  binding: DurableObjectNamespace<SluiceDurableObject> | DurableObjectNamespace | string;
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
  /** None: the objects keep every count. */
  isolateTables(): [];
  /** Whether env has the Durable Object namespace. */
  isBound(env: unknown): boolean;
}

export declare function createDurableStore(options: DurableStoreOptions): DurableStore;
