import type { Store } from "./store.js";

/** The store that decides checks in the isolate's own sluice.wasm instance, synchronously. */
export declare function createMemoryStore(): Store & { readonly name: "memory" };
