// The stores' own counters as Prometheus families: how the durable, KV and Redis chains this isolate
// built decided, how often each store failed or timed out, what each store's circuit breaker did, for
// a durable chain with `lease`, how its isolate used leases (stores/leases.js), and for a Redis chain,
// its round trips and refusals (stores/redis.js). The gateway's per-rule `fallbacks` says that a rule
// fell back; these say which store failed, and how.
//
// A chain is labelled by its kind and binding (`chain="durable:SLUICE_DO"`, `chain="redis:<URL env
// variable>"`). Chains of the same kind and binding with other settings (a timeout, a fail mode, a
// rule's own lease) add up in one series: counters sum.

import { roundTripFamilies } from "./store-round-trips.js";

/** Families from storeStats() (stores/registry.js): [{ name, help, type, samples }]. */
/**
 * @param {import("../src/stores/registry.js").StoreStats[]} stats
 * @returns {import("./metrics.js").MetricFamily[]}
 */
export function storeFamilies(stats) {
  const decided = new Map();
  const failures = new Map();
  const weakened = new Map();
  const late = new Map();
  const perChain = { circuitOpened: new Map(), circuitSkipped: new Map(), preFiltered: new Map() };
  const perStore = { circuitOpenedBy: new Map(), circuitSkippedBy: new Map() };
  const perRedisChain = Object.fromEntries(Object.keys(REDIS_FAMILIES).map((counter) => [counter, new Map()]));
  const perLeasedChain = Object.fromEntries(Object.keys(LEASE_FAMILIES).map((counter) => [counter, new Map()]));
  /** One sample per distinct label set, summed. @typedef {Map<string, { labels: Record<string, string>, value: number }>} Samples */
  /** @param {Samples} map @param {Record<string, string>} labels @param {number} value */
  const add = (map, labels, value) => {
    const id = JSON.stringify(labels);
    const entry = map.get(id);
    if (entry === undefined) map.set(id, { labels, value });
    else entry.value += value;
  };
  for (const { store, bindings, counters, leases, redis } of stats) {
    const chain = `${store}:${chainBinding(store, bindings)}`;
    for (const [by, value] of Object.entries(counters.decided)) add(decided, { chain, decided_by: by }, value);
    for (const [kind, byStore] of /** @type {Array<[string, Record<string, number>]>} */ ([["error", counters.errors], ["timeout", counters.timeouts]])) {
      for (const [name, value] of Object.entries(byStore)) add(failures, { chain, store: name, kind }, value);
    }
    for (const [counter, map] of Object.entries(perChain)) add(map, { chain }, counters[/** @type {keyof typeof perChain} */ (counter)]);
    // Decisions a fallback weaker than the primary took (alert on these: the limit was not exact).
    for (const [by, value] of Object.entries(counters.weakened ?? {})) add(weakened, { chain, decided_by: by }, value);
    // Primary calls the chain stopped waiting for, by what became of them.
    for (const [outcome, value] of Object.entries(counters.late ?? {})) add(late, { chain, outcome }, value);
    // Every store of a chain has its own breaker: which one opened, which one was skipped.
    for (const [counter, map] of Object.entries(perStore)) {
      for (const [name, value] of Object.entries(counters[/** @type {keyof typeof perStore} */ (counter)] ?? {})) add(map, { chain, store: name }, value);
    }
    if (redis !== null && redis !== undefined) {
      for (const [counter, map] of Object.entries(perRedisChain)) add(map, { chain }, redis[/** @type {keyof typeof redis} */ (counter)]);
    }
    // A durable chain with `lease` set: how its isolate decided from leases (stores/leases.js).
    if (leases !== null && leases !== undefined) {
      for (const [counter, map] of Object.entries(perLeasedChain)) add(map, { chain }, leases[/** @type {keyof typeof leases} */ (counter)]);
    }
  }
  const samples = (/** @type {Samples} */ map) => [...map.values()];
  return [
    {
      name: "sluice_store_decisions_total",
      help: "Decisions of each durable or KV chain, by the store that took them (failMode: none could).",
      type: "counter",
      samples: samples(decided),
    },
    {
      name: "sluice_store_failures_total",
      help: "Calls to a store of a chain that threw (error) or did not answer within the chain's timeoutMs (timeout).",
      type: "counter",
      samples: samples(failures),
    },
    {
      name: "sluice_store_weakened_total",
      help: "Decisions taken by a fallback weaker than the chain's primary (a fallback store, or failMode open): the limit was not exact for them.",
      type: "counter",
      samples: samples(weakened),
    },
    {
      name: "sluice_store_late_total",
      help: "Primary calls the chain stopped waiting for, by outcome: answered late (agreed, undone, undoMissed, admittedUncounted), failed, or unanswered.",
      type: "counter",
      samples: samples(late),
    },
    {
      name: "sluice_store_circuit_opened_total",
      help: "Times a chain's circuit breaker stopped asking its primary store after failures in a row.",
      type: "counter",
      samples: samples(perChain.circuitOpened),
    },
    {
      name: "sluice_store_circuit_skipped_total",
      help: "Decisions that skipped a chain's primary store because its circuit breaker was open.",
      type: "counter",
      samples: samples(perChain.circuitSkipped),
    },
    {
      name: "sluice_store_prefiltered_total",
      help: "Denials a chain answered from the isolate's memory of its store's earlier denials, with no round trip.",
      type: "counter",
      samples: samples(perChain.preFiltered),
    },
    {
      name: "sluice_store_breaker_opened_total",
      help: "Times the circuit breaker of one store of a chain opened (each store of a chain has its own).",
      type: "counter",
      samples: samples(perStore.circuitOpenedBy),
    },
    {
      name: "sluice_store_breaker_skipped_total",
      help: "Times one store of a chain was skipped because its circuit breaker was open.",
      type: "counter",
      samples: samples(perStore.circuitSkippedBy),
    },
    ...Object.entries(LEASE_FAMILIES).map(([counter, [name, help]]) => ({
      name,
      help,
      type: /** @type {const} */ ("counter"),
      samples: samples(perLeasedChain[counter]),
    })),
    ...Object.entries(REDIS_FAMILIES).map(([counter, [name, help]]) => ({
      name,
      help,
      type: /** @type {const} */ ("counter"),
      samples: samples(perRedisChain[counter]),
    })),
    // How long the exact stores took: gauges, not counters (store-round-trips.js).
    ...roundTripFamilies(stats, ({ store, bindings }) => `${store}:${chainBinding(store, bindings)}`),
  ];
}

// The binding that names a chain: the object's namespace, the KV namespace, or Redis's URL variable.
/** @param {string} store @param {Record<string, string>} bindings @returns {string} */
function chainBinding(store, bindings) {
  if (store === "durable") return bindings.durable;
  if (store === "redis") return bindings.redisUrl;
  return bindings.kv;
}

// The Redis store's counters (RedisStoreCounters, stores/redis.js) as families: counter -> [name, help].
const REDIS_FAMILIES = {
  decisions: ["sluice_redis_decisions_total", "Decisions a Redis chain's store took (each one or more script calls)."],
  roundTrips: ["sluice_redis_round_trips_total", "HTTP requests a Redis chain sent to the REST endpoint."],
  conflicts: ["sluice_redis_conflicts_total", "Script calls refused because another isolate had written the key since this one read it."],
  clockRefusals: ["sluice_redis_clock_refusals_total", "Script calls refused because the decision time was too far from Redis's TIME."],
  held: ["sluice_redis_held_total", "Script calls refused because another isolate held the key; answered after a wait."],
  exhausted: ["sluice_redis_exhausted_total", "Decisions a Redis chain's store gave up on after too many refused script calls (the chain fell back)."],
  batches: ["sluice_redis_batches_total", "Script calls that decided (applied); decisions / batches is the mean batch."],
  appends: ["sluice_redis_appends_total", "Batches decided by appending to a contended key's log (included in batches)."],
  givenUp: ["sluice_redis_given_up_total", "Script calls that did not answer in time: their requests were decided by the chain."],
  lateAnswered: ["sluice_redis_late_answered_total", "Given-up script calls whose answer came after all."],
  lateApplied: ["sluice_redis_late_applied_total", "Of those, calls that landed: their requests were charged."],
  undone: ["sluice_redis_undone_total", "Charges of given-up requests taken back (the chain had denied them)."],
  undoMissed: ["sluice_redis_undo_missed_total", "Charges that could not be taken back (another isolate wrote over the call's write first)."],
  overdue: ["sluice_redis_overdue_total", "Calls that went while the call ahead still held their keys past its bound."],
};

// The lease counters (LeaseCounters, stores/leases.js) as families: counter -> [name, help].
const LEASE_FAMILIES = {
  roundTrips: ["sluice_lease_round_trips_total", "Calls a leased durable chain made to its object (to decide, to take or give back a lease), refills included."],
  refills: ["sluice_lease_refills_total", "Calls that asked for a warm key's next lease in the background, before its lease ran out: no request waited on them."],
  leasedDecisions: ["sluice_lease_decisions_total", "Decisions a leased durable chain took in this isolate from a lease, with no round trip."],
  leasesGranted: ["sluice_lease_granted_total", "Leases the object granted to this isolate."],
  leasesAhead: ["sluice_lease_ahead_total", "Of those, leases lent ahead from a key's next window (fixed window, sliding counter), usable from its start."],
  bridgedDecisions: ["sluice_lease_bridged_decisions_total", "Decisions taken across a window's start from a unit of each window's lease (no round trip)."],
  unitsLent: ["sluice_lease_units_lent_total", "Units those leases carried."],
  leasesExpired: ["sluice_lease_expired_total", "Leases that ended with units unused."],
  unitsReturned: ["sluice_lease_units_returned_total", "Unused units the object took back."],
  unitsStranded: ["sluice_lease_units_stranded_total", "Unused units that could not go back: admitted by no one until their window ends (a bucket's: until it drains them)."],
};
