// node bench/local-decision-cpu.js: the on-CPU cost of a warm key's decision taken from a lease, through
// the fallback chain as a Worker calls it (leases.js decideLocally, the chain's pre-filter and
// bookkeeping, the background refills it starts), in this Node process: process.cpuUsage() (user +
// system) over DECISIONS decisions, REPETITIONS times. The object behind the lease answers at once
// (an in-process stand-in lending whatever is asked), so nothing here waits on a round trip: what is
// measured is the isolate's own work, which is what a lease adds to a warm key's request beside the
// store's wait (bench/planet-leases.js reports that wait from the geography seam's clock).
// Prints JSON; bench/planet-leases.js calls measureLocalDecisionCpu() and keeps it in its JSON.
import { createFallbackChain } from "../worker/src/stores/chain.js";
import { createLeasedStore } from "../worker/src/stores/leases.js";
import { createMemoryStore } from "../worker/src/stores/memory.js";

const DECISIONS = 20_000;
const REPETITIONS = 7;
const RULE = { id: "cpu|fixed-window|1000000000|60000|0", name: "cpu", algorithm: "fixed-window", limit: 1e9, windowMs: 60_000, burst: 0, keyCapacity: 1000 };

// An object that lends what it is asked, at once, for the lease's whole length (never near its limit).
function instantObject() {
  const lease = (wanted, leaseMs) => ({ units: wanted, expiresAtMs: 0, validForMs: leaseMs, startsInMs: 0, remaining: 1e9, endsWithWindow: false });
  const outcome = (checks) => ({ allowed: true, limit: RULE.limit, remaining: 1e9, resetMs: 60_000, retryAfterMs: 0, decidingCheck: 0, checks: checks.map(() => ({ allowed: true, limit: RULE.limit, remaining: 1e9, resetMs: 60_000, retryAfterMs: 0 })) });
  return {
    name: "durable",
    objectOf: () => "cpu/1/0",
    isBound: () => true,
    reset: async () => {},
    decide: async (checks, options) => ({ ...outcome(checks), ...(options.lend ? { leases: options.lend.wanted.map((w) => (w > 0 ? lease(w, options.lend.leaseMs) : null)) } : {}) }),
    refill: async (checks, options) => ({ leases: options.lend.wanted.map((w) => lease(w, options.lend.leaseMs)), returned: null, resetMs: checks.map(() => 60_000) }),
  };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * measureLocalDecisionCpu: microseconds of CPU per leased decision through the chain (median of the
 * repetitions, with their min and max), and how many of the measured decisions came from a lease.
 */
export async function measureLocalDecisionCpu() {
  let nowMs = 1_700_000_000_000;
  const clock = () => nowMs;
  const leased = createLeasedStore({ durable: /** @type {any} */ (instantObject()), clock });
  const chain = createFallbackChain({ primary: leased, memory: createMemoryStore(), timeoutMs: 5000, log: () => {} });
  const checks = [{ rule: RULE, key: "warm", cost: 1 }];
  // Warm-up: the key's rate is learnt and its first lease taken (1 ms apart, as a hot key's requests).
  for (let i = 0; i < 2_000; i++) {
    nowMs += 1;
    await chain.decide(checks, { nowMs });
  }
  const perDecisionUs = [];
  let fromLease = 0;
  for (let rep = 0; rep < REPETITIONS; rep++) {
    const before = leased.counters.leasedDecisions;
    const start = process.cpuUsage();
    for (let i = 0; i < DECISIONS; i++) {
      nowMs += 1;
      await chain.decide(checks, { nowMs });
    }
    const used = process.cpuUsage(start);
    perDecisionUs.push((used.user + used.system) / DECISIONS);
    fromLease += leased.counters.leasedDecisions - before;
  }
  const round = (us) => Math.round(us * 100) / 100;
  return {
    decisions: DECISIONS * REPETITIONS,
    fromLeaseShare: fromLease / (DECISIONS * REPETITIONS),
    cpuUsPerDecision: { median: round(median(perDecisionUs)), min: round(Math.min(...perDecisionUs)), max: round(Math.max(...perDecisionUs)) },
    repetitions: REPETITIONS,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await measureLocalDecisionCpu(), null, 2));
