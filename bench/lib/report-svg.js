// bench/results.svg, written by hand (no charting dependency): (a) decisions per second as a ratio
// to the plain-JS fixed window, per workload; (b) bytes per key at the largest key count; (c) the
// time each Hono middleware adds per request.

const COLORS = {
  "harness-only": "#d9f0d3",
  "plain-fixed-window": "#6b6b6b",
  "plain-sliding-counter": "#9a9a9a",
  "plain-token-bucket": "#c4c4c4",
  "sluice-fixed-window": "#08519c",
  "sluice-sliding-counter": "#3182bd",
  "sluice-token-bucket": "#6baed6",
  "sluice-leaky-bucket": "#9ecae1",
  "sluice-gcra": "#c6dbef",
  "sluice-sliding-log": "#deebf7",
  "rate-limiter-flexible": "#d94801",
  "hono-rate-limiter-store": "#fd8d3c",
  "express-rate-limit-store": "#a63603",
};
const ROUTE_COLORS = { "plain-js-middleware": "#6b6b6b", "hono-rate-limiter": "#fd8d3c", sluice: "#08519c" };

const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const text = (x, y, s, attrs = "") => `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(s)}</text>`;
const rect = (x, y, w, h, fill, title) =>
  `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(w, 0).toFixed(1)}" height="${Math.max(h, 0).toFixed(1)}" fill="${fill}"><title>${esc(title)}</title></rect>`;

function niceMax(value) {
  const step = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * step >= value) return m * step;
  return 10 * step;
}

// A workload's name as the lines under its bars: short words, one clause a line, so that nine groups
// fit side by side ("1,000,000 keys, uniform, strings reused" -> "1M keys", "uniform", "reused strings").
function groupLabel(name) {
  return name
    .replace(/1,000,000 keys/, "1M keys")
    .replace(/100,000 keys/, "100k keys")
    .replace("one string object reused", "reused string")
    .replace("strings reused", "reused strings")
    .replace(/mostly /g, "")
    .split(", ");
}

function ratioPanel(results, top, width) {
  const f = results.figures;
  const groups = [
    ...Object.entries(f.hotKey).map(([mode, rows]) => [`hot key, ${mode}`, rows]),
    ...Object.entries(f.manyKeys).map(([id, rows]) => [id.replace(/^(\d+)/, (n) => `${Number(n).toLocaleString("en")} keys,`), rows]),
  ];
  // The harness row (a ceiling, not a limiter) would flatten every bar; results.md lists it.
  const subjects = Object.keys(groups[0][1]).filter((s) => results.subjects[s]?.family !== "harness");
  const left = 60;
  const plotW = width - left - 20;
  const plotH = 220;
  const y0 = top + 40 + plotH;
  const maxRatio = niceMax(Math.max(...groups.flatMap(([, rows]) => subjects.map((s) => rows[s].ratio ?? 0))));
  const scale = (r) => (r / maxRatio) * plotH;
  const parts = [text(left, top + 18, "(a) decisions per second, as a ratio to the plain-JS fixed window (= 1, dashed)", 'font-weight="bold"')];
  for (let i = 0; i <= 4; i++) {
    const v = (maxRatio * i) / 4;
    const y = y0 - scale(v);
    parts.push(`<line x1="${left}" y1="${y.toFixed(1)}" x2="${left + plotW}" y2="${y.toFixed(1)}" stroke="#e5e5e5"/>`);
    parts.push(text(left - 6, y + 4, `x${Number.isInteger(v) ? v : v.toFixed(2)}`, 'text-anchor="end"'));
  }
  const groupW = plotW / groups.length;
  const barW = (groupW - 16) / subjects.length;
  groups.forEach(([name, rows], g) => {
    const gx = left + g * groupW + 8;
    subjects.forEach((s, i) => {
      const r = rows[s].ratio ?? 0;
      const h = scale(r);
      parts.push(rect(gx + i * barW, y0 - h, barW - 1, h, COLORS[s] ?? "#999", `${s}, ${name}: x${r.toFixed(2)} (${Math.round(rows[s].decisionsPerSecond.median).toLocaleString("en")}/s)`));
    });
    groupLabel(name).forEach((line, l) => parts.push(text(gx + (groupW - 16) / 2, y0 + 14 + l * 11, line, 'text-anchor="middle" font-size="9"')));
  });
  const one = y0 - scale(1);
  parts.push(`<line x1="${left}" y1="${one.toFixed(1)}" x2="${left + plotW}" y2="${one.toFixed(1)}" stroke="#000" stroke-dasharray="4 3"/>`);
  // Legend, three columns, below the group labels.
  const labelLines = Math.max(...groups.map(([name]) => groupLabel(name).length));
  const legendTop = y0 + 22 + labelLines * 11;
  subjects.forEach((s, i) => {
    const lx = left + (i % 3) * (plotW / 3);
    const ly = legendTop + Math.floor(i / 3) * 16;
    parts.push(rect(lx, ly - 9, 10, 10, COLORS[s] ?? "#999", s), text(lx + 14, ly, results.subjects[s]?.label ?? s));
  });
  return { svg: parts.join("\n"), height: 40 + plotH + 22 + labelLines * 11 + 16 * Math.ceil(subjects.length / 3) + 10 };
}

function hbarPanel(title, rows, top, width, unit, marker) {
  const left = 250;
  const plotW = width - left - 80;
  const rowH = 18;
  const max = niceMax(Math.max(...rows.map((r) => r.value), marker?.value ?? 0));
  const parts = [text(60, top + 18, title, 'font-weight="bold"')];
  rows.forEach((r, i) => {
    const y = top + 30 + i * rowH;
    const w = (r.value / max) * plotW;
    parts.push(text(left - 8, y + 12, r.label, 'text-anchor="end"'), rect(left, y + 2, w, rowH - 4, r.color, `${r.label}: ${r.value.toFixed(2)} ${unit}`));
    parts.push(text(left + w + 6, y + 12, `${r.value.toFixed(r.value < 10 ? 2 : 1)} ${unit}`));
  });
  if (marker) {
    const x = left + (marker.value / max) * plotW;
    const bottom = top + 30 + rows.length * rowH;
    parts.push(`<line x1="${x.toFixed(1)}" y1="${top + 26}" x2="${x.toFixed(1)}" y2="${bottom}" stroke="#c00" stroke-dasharray="4 3"/>`);
    parts.push(text(x + 4, bottom + 10, marker.label, 'fill="#c00"'));
  }
  return { svg: parts.join("\n"), height: 30 + rows.length * rowH + 16 };
}

export function renderSvg(results) {
  const width = 960;
  const f = results.figures;
  const sizes = Object.keys(f.bytesPerKey);
  const largest = sizes[sizes.length - 1];
  const panels = [];
  let top = 40;
  const a = ratioPanel(results, top, width);
  panels.push(a.svg);
  top += a.height;
  const memoryRows = Object.entries(f.bytesPerKey[largest]).map(([s, r]) => ({
    label: `${results.subjects[s]?.label ?? s}${r.keysInserted === Number(largest) ? "" : ` (${r.keysInserted.toLocaleString("en")} keys)`}`,
    value: r.bytesPerKey,
    color: COLORS[s] ?? "#999",
  }));
  const b = hbarPanel(`(b) bytes per key at ${Number(largest).toLocaleString("en")} keys (V8 heap growth + sluice's linear memory)`, memoryRows, top, width, "B", { value: 32, label: "32 B floor" });
  panels.push(b.svg);
  top += b.height;
  const honoRows = Object.entries(f.hono.routes)
    .filter(([route]) => route !== "bare")
    .map(([route, r]) => ({ label: route, value: r.addedMicroseconds.median, color: ROUTE_COLORS[route] ?? "#999" }));
  const c = hbarPanel(
    `(c) microseconds a Hono middleware adds per request, against the bare route${f.hono.sluice === "measured" ? "" : " (sluice: pending)"}`,
    honoRows,
    top,
    width,
    "us",
  );
  panels.push(c.svg);
  top += c.height;
  const m = results.machine;
  const title = `sluice vs peers inside workerd: ${results.quick ? "quick" : "full"} run, ${m.date.slice(0, 10)}, ${m.nproc} x ${m.cpuModel}, medians of ${results.plan.reps} interleaved repetitions`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${top + 10}" viewBox="0 0 ${width} ${top + 10}" font-family="Helvetica, Arial, sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    text(60, 24, title, 'font-size="13" font-weight="bold"'),
    ...panels,
    `</svg>`,
    "",
  ].join("\n");
}
