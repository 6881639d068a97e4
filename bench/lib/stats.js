// Summaries of interleaved repetitions. Ratios are taken per repetition (both subjects measured
// moments apart) and then summarised, which holds better on a noisy machine than a ratio of medians.

export function median(values) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** summary gives the median and the range of a list of samples. */
export function summary(values) {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

/** ratios divides each sample by the baseline's sample of the same repetition. */
export function ratios(samples, baselineSamples) {
  return samples.map((value, i) => value / baselineSamples[i]);
}

/** rotate gives the list started at offset `by`, so every subject runs first in some repetition. */
export function rotate(list, by) {
  const k = ((by % list.length) + list.length) % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}
