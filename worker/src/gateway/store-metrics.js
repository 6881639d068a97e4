// The stores' own counters as Prometheus families: how the durable and KV chains this isolate built
// decided, how often each store failed or timed out, and what the circuit breaker did. The gateway's
// per-rule `fallbacks` says that a rule fell back; these say which store failed, and how.
//
// A chain is labelled by its kind and binding (`chain="durable:SLUICE_DO"`). Chains of the same kind
// and binding with other settings (a timeout, a fail mode) add up in one series: counters sum.

/** Families from storeStats() (stores/registry.js): [{ name, help, type, samples }]. */
/**
 * @param {import("../stores/registry.js").StoreStats[]} stats
 * @returns {import("./metrics.js").MetricFamily[]}
 */
export function storeFamilies(stats) {
  const decided = new Map();
  const failures = new Map();
  const perChain = { circuitOpened: new Map(), circuitSkipped: new Map(), preFiltered: new Map() };
  const add = (map, labels, value) => {
    const id = JSON.stringify(labels);
    const entry = map.get(id);
    if (entry === undefined) map.set(id, { labels, value });
    else entry.value += value;
  };
  for (const { store, bindings, counters } of stats) {
    const chain = `${store}:${store === "durable" ? bindings.durable : bindings.kv}`;
    for (const [by, value] of Object.entries(counters.decided)) add(decided, { chain, decided_by: by }, value);
    for (const [kind, byStore] of [["error", counters.errors], ["timeout", counters.timeouts]]) {
      for (const [name, value] of Object.entries(byStore)) add(failures, { chain, store: name, kind }, value);
    }
    for (const [counter, map] of Object.entries(perChain)) add(map, { chain }, counters[counter]);
  }
  const samples = (map) => [...map.values()];
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
  ];
}
