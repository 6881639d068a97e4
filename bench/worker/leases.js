// Figure 10: one rule shared by several isolates, through the stores a Worker gets from its options
// (worker/src/stores/registry.js): store "memory", store "durable", and store "durable" with leases.
// Each isolate runs this for the same run id at the same time (bench/run.js starts them together).
import { resolveStore } from "../../worker/src/stores/registry.js";
import { arrivalOrder, hotKeyOf, keyOf } from "./workload.js";
import { countingNamespace } from "./counting-namespace.js";

const ZIPF_KEYS = 1000;
let zipfOrder = null;

/**
 * timeLeases decides requests of one check on a rule (`algorithm`, `limit` per `windowMs`) through `target`
 * ("memory", "durable", "leased"), keys drawn from `dist` ("hot": one key; "zipf": 1,000 keys), with
 * `inFlight` loops at once, for minMs after an untimed warm-up as long. Returns decisions, admissions per window and key, round trips,
 * and a histogram of per-decision latency in whole milliseconds (workerd's clock locally).
 */
export async function timeLeases({ target, dist, algorithm = "fixed-window", limit, windowMs, runId, inFlight, minMs, warmUpMs, isolate }, env) {
  const counter = { rpcs: 0 };
  const storeEnv = { SLUICE_DO: countingNamespace(env.SLUICE_DO, counter) };
  const options =
    target === "memory"
      ? {}
      : { store: "durable", fallback: [], failMode: "closed", timeoutMs: 5_000, breaker: false, ...(target === "leased" ? { lease: true } : {}) };
  const store = resolveStore(options);
  const name = `lease-bench-${runId}`;
  const rule = Object.freeze({ id: `${name}|${algorithm}|${limit}|${windowMs}|0`, name, algorithm, limit, windowMs, burst: 0, keyCapacity: ZIPF_KEYS * 2 });
  // Where an admission is counted: a fixed window's (below); a sliding log's whole run (its keys are this
  // run's own and the run lasts seconds, so every admission of a key lies in one window of windowMs).
  const slotOf =
    algorithm === "sliding-log"
      ? (key) => key
      : // The window the deciding store charged, from its own answer: a fixed window ends at a
        // multiple of windowMs, `resetMs` after the store's now. (This isolate's clock, read before a
        // call to the object, can sit on the other side of a window's end than the object's.)
        (key, outcome) => `${Math.round((Date.now() + outcome.resetMs) / windowMs) - 1} ${key}`;
  if (dist === "zipf") zipfOrder ??= arrivalOrder(ZIPF_KEYS, "zipf");
  const keyAt = dist === "hot" ? () => hotKeyOf(0) : (i) => keyOf(zipfOrder[(i * 7 + isolate * 104_729) & (zipfOrder.length - 1)]);

  const admitted = {}; // slotOf(key) -> admitted, warm-up included (the limit holds over both)
  let decisions = 0;
  let admittedTimed = 0;
  let latency = {}; // whole ms -> decisions
  let start = performance.now();
  let now = start;
  let next = 0;
  let runMs = warmUpMs;
  const lane = async () => {
    while (now - start < runMs) {
      const key = keyAt(next++);
      const before = performance.now();
      const nowMs = Date.now();
      const decided = store.decide([{ rule, key, cost: 1 }], { nowMs, env: storeEnv });
      const outcome = decided instanceof Promise ? await decided : decided;
      now = performance.now();
      const ms = Math.round(now - before);
      latency[ms] = (latency[ms] ?? 0) + 1;
      decisions++;
      if (outcome.allowed) {
        admittedTimed++;
        const slot = slotOf(key, outcome);
        admitted[slot] = (admitted[slot] ?? 0) + 1;
      }
      // A synchronous answer (memory, a lease) never yields: let the other lanes and the clock run.
      if (!(decided instanceof Promise) && (decisions & 255) === 0) await null;
    }
  };
  // For the Zipf mix, an untimed warm-up of warmUpMs, so that its keys are as warm as in a Worker that
  // has been serving them (a key takes leases only once its rate here asks for them). One hot key
  // is warm after its first requests, and a warm-up would spend its minute's limit before the timing.
  if (dist === "zipf") await Promise.all(Array.from({ length: inFlight }, lane));
  decisions = 0;
  admittedTimed = 0;
  latency = {};
  counter.rpcs = 0;
  start = performance.now();
  now = start;
  runMs = minMs;
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { decisions, admittedTimed, ms: now - start, admitted, latency, roundTrips: counter.rpcs };
}
