// Reads a DevTools .cpuprofile: where the samples fell, by function (self time) and by source line.
// Line ticks come from V8's positionTicks, which keep inlined code on its own function's lines.

const nameOf = (node) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url === "" ? "" : url.split("/").slice(-2).join("/");
  return `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`;
};

/**
 * summarizeProfile returns { samples, functions: [{ name, share }], lines: [{ name, line, share }] },
 * each sorted by share of all samples, largest first, `top` of each.
 */
export function summarizeProfile(profile, top = 25) {
  const total = profile.samples.length;
  const hits = new Map();
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const self = new Map();
  const lines = new Map();
  for (const node of profile.nodes) {
    const count = hits.get(node.id) ?? 0;
    if (count === 0) continue;
    const name = nameOf(node);
    self.set(name, (self.get(name) ?? 0) + count);
    for (const { line, ticks } of node.positionTicks ?? []) {
      const key = `${node.callFrame.url}\u0000${line}\u0000${name}`;
      lines.set(key, (lines.get(key) ?? 0) + ticks);
    }
  }
  const sorted = (map) => [...map].sort((a, b) => b[1] - a[1]).slice(0, top);
  return {
    samples: total,
    functions: sorted(self).map(([name, count]) => ({ name, share: count / total })),
    lines: sorted(lines).map(([key, count]) => {
      const [url, line, name] = key.split("\u0000");
      return { name, url, line: Number(line), share: count / total };
    }),
  };
}
