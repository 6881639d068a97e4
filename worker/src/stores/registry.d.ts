import type { Store } from "./store.js";

export type StoreOption = "memory" | "durable" | "kv" | Store;

/** Turns the `store` option into a store; throws SluiceConfigError naming `field` for refused ones. */
export declare function resolveStore(option?: StoreOption, field?: string): Store;
