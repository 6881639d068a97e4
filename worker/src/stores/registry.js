// Which store a limiter's `store` option names. Every store implements one contract (see store.d.ts):
//   decide(checks, { nowMs?, peek?, env?, ctx? }) -> Outcome | Promise<Outcome>
// so the engine never knows which one it talks to. A store object passed as the option is used as it
// is; that is also how the Durable Object and KV stores plug in once they land.
import { SluiceConfigError, describe } from "../errors.js";
import { createMemoryStore } from "./memory.js";

// Named stores that exist but are not wired into the host yet, and what they will be.
const NOT_YET = Object.freeze({
  durable: "counters shared by every isolate, in a Durable Object",
  kv: "counters in Workers KV",
});

let memoryStore = null;

/** resolveStore turns the `store` option into a store, or throws naming the option. */
export function resolveStore(option = "memory", field = "store") {
  if (option === "memory") return (memoryStore ??= createMemoryStore());
  if (typeof option === "string" && Object.hasOwn(NOT_YET, option)) {
    throw new SluiceConfigError(
      field,
      `'${option}' (${NOT_YET[option]}) is not available yet: it comes with the strict-mode work. Use store: 'memory'.`,
    );
  }
  if (option !== null && typeof option === "object" && typeof option.decide === "function") return option;
  throw new SluiceConfigError(field, `must be 'memory', 'durable', 'kv' or a store object with decide(); got ${describe(option)}`);
}
