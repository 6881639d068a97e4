// How long the exact stores' calls take, as Prometheus gauges: per chain (`chain="durable:SLUICE_DO"`,
// `chain="redis:<URL env variable>"`), the smoothed round trip the store's timeout is learnt from
// (stores/round-trip.js) and the median, 99th percentile and largest of its last round trips
// (stores/recent-round-trips.js), in ms, with the count of round trips measured as a counter. A chain
// that has measured nothing has no sample (a gauge of NaN would only be noise on a graph).
//
// Chains of one kind and binding with other settings share a series, as the counters do: their
// largest and p99 are the largest of theirs, their smoothed round trip and median the mean of theirs
// weighted by the round trips each measured. Each gauge says how the dashboard's aggregator combines
// isolates (`reduce`): the same way, the largest or the mean.

/** @import { MetricFamily } from "./metrics.js" */

// [stat of the summary, family name, help, how chains and isolates combine]
const GAUGES = /** @type {const} */ ([
  ["srttMs", "sluice_store_round_trip_smoothed_ms", "The smoothed round trip of a chain's exact store (RFC 6298's SRTT over its objects or URLs), ms.", "mean"],
  ["p50Ms", "sluice_store_round_trip_p50_ms", "The median of a chain's exact store's last 256 round trips, ms.", "mean"],
  ["p99Ms", "sluice_store_round_trip_p99_ms", "The 99th percentile of a chain's exact store's last 256 round trips, ms.", "max"],
  ["maxMs", "sluice_store_round_trip_max_ms", "The largest of a chain's exact store's last 256 round trips, ms.", "max"],
]);

/**
 * roundTripFamilies lists the round-trip gauges of the chains in `stats` (storeStats()).
 * @param {import("../src/stores/registry.js").StoreStats[]} stats
 * @param {(stats: import("../src/stores/registry.js").StoreStats) => string} chainOf The chain label of a chain.
 * @returns {MetricFamily[]}
 */
export function roundTripFamilies(stats, chainOf) {
  /** @type {Map<string, { measured: number, weight: number, values: Record<string, number> }>} */
  const chains = new Map();
  for (const chainStats of stats) {
    const roundTrip = chainStats.roundTrip;
    if (roundTrip === null || roundTrip === undefined || roundTrip.samples === 0) continue;
    const chain = chainOf(chainStats);
    const stat = { srttMs: roundTrip.srttMs, ...roundTrip.recent };
    const known = chains.get(chain);
    if (known === undefined) {
      chains.set(chain, { measured: roundTrip.samples, weight: roundTrip.samples, values: { ...stat } });
      continue;
    }
    for (const [key, , , reduce] of GAUGES) {
      known.values[key] = reduce === "max" ? Math.max(known.values[key], stat[key]) : (known.values[key] * known.weight + stat[key] * roundTrip.samples) / (known.weight + roundTrip.samples);
    }
    known.measured += roundTrip.samples;
    known.weight += roundTrip.samples;
  }
  const entries = [...chains];
  return [
    {
      name: "sluice_store_round_trips_measured_total",
      help: "Round trips of a chain's exact store that were measured (late answers included).",
      type: "counter",
      samples: entries.map(([chain, { measured }]) => ({ labels: { chain }, value: measured })),
    },
    ...GAUGES.map(([key, name, help, reduce]) => ({
      name,
      help,
      type: /** @type {const} */ ("gauge"),
      reduce,
      samples: entries.map(([chain, { values }]) => ({ labels: { chain }, value: values[key] })),
    })),
  ];
}
