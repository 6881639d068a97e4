// The accuracy probes' counters as Prometheus families: per route and store, how often a memory or KV
// rule group agreed with exact counting on the sampled keys (features/accuracy/probe.js). The share
// of disagreement is (over_admitted + under_admitted) / (sampled - failed - pending).

const OUTCOMES = /** @type {const} */ ([
  ["agreed", "agreed"],
  ["over_admitted", "overAdmitted"],
  ["under_admitted", "underAdmitted"],
  ["failed", "failed"],
]);

/**
 * @param {readonly import("./limiter.js").AccuracyProbeEntry[]} probes
 * @returns {import("./metrics.js").MetricFamily[]}
 */
export function accuracyFamilies(probes) {
  if (probes.length === 0) return [];
  return [
    {
      name: "sluice_accuracy_sampled_total",
      help: "Requests of sampled keys sent to the exact reference, per route and approximate store.",
      type: "counter",
      samples: probes.map(({ route, store, probe }) => ({ labels: { route, store }, value: probe.counters.sampled })),
    },
    {
      name: "sluice_accuracy_compared_total",
      help: "Answers of the exact reference compared with the rule group's decision: agreed, over_admitted (admitted what exact counting denied), under_admitted, failed (no answer).",
      type: "counter",
      samples: probes.flatMap(({ route, store, probe }) => OUTCOMES.map(([outcome, field]) => ({ labels: { route, store, outcome }, value: probe.counters[field] }))),
    },
  ];
}
