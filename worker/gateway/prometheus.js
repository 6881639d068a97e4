// The Prometheus text exposition format, version 0.0.4: for each family a `# HELP` and a `# TYPE`
// line, then one `name{label="value",...} number` line per sample; the text ends with a newline.

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A label value as the format quotes it: backslash, double quote and line feed escaped. @param {string} value @returns {string} */
export function escapeLabelValue(value) {
  return String(value).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** HELP text as the format carries it: backslash and line feed escaped (quotes stay). @param {string} text @returns {string} */
export function escapeHelp(text) {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/** @param {number} value @returns {string} */
export function formatValue(value) {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

/** @param {Record<string, string>} labels @returns {string} */
function formatLabels(labels) {
  const pairs = Object.entries(labels).map(([name, value]) => {
    if (!LABEL_NAME.test(name) || name.startsWith("__")) throw new Error(`invalid Prometheus label name ${name}`);
    return `${name}="${escapeLabelValue(value)}"`;
  });
  return pairs.length === 0 ? "" : `{${pairs.join(",")}}`;
}

/** The exposition of `families`: [{ name, help, type, samples: [{ labels, value }] }]. @param {ReadonlyArray<{ name: string, help: string, type: string, samples: ReadonlyArray<{ labels: Record<string, string>, value: number }> }>} families @returns {string} */
export function exposition(families) {
  const lines = [];
  for (const { name, help, type, samples } of families) {
    if (!METRIC_NAME.test(name)) throw new Error(`invalid Prometheus metric name ${name}`);
    lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
    for (const { labels, value } of samples) lines.push(`${name}${formatLabels(labels)} ${formatValue(value)}`);
  }
  return `${lines.join("\n")}\n`;
}
