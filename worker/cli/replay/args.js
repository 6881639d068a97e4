// The command line of `sluice replay`, read with node:util's parseArgs. Every mistake is a
// ReplayUsageError naming the flag, shown with the usage line.
import { parseArgs } from "node:util";
import { ReplayUsageError } from "./errors.js";
import { parseColumnMap } from "./formats/csv.js";
import { FORMATS } from "./formats/detect.js";
import { RULE_GRAMMAR, checkRuleNames, parseRule } from "./rules.js";

/** @import { CliRule } from "./rules.js" */

export const USAGE = `usage: sluice replay [options] [LOG ...]

Replays logged requests through sluice's rules, at the logs' own times, and reports what the rules
would have done. LOG files may be gzip; none, or "-", reads standard input.

  --config FILE        the gateway's gateway.config.json: its routes, keys, algorithms and modes
  --rule "RULE"        a rule of your own (repeatable, instead of --config):
                       ${RULE_GRAMMAR}
  --format FORMAT      logpush, combined or csv (default: found from the first line)
  --columns MAP        CSV columns: time=COL,ip=COL,method=COL,uri=COL[,host=COL][,status=COL][,header:NAME=COL]
  --json               print the summary as JSON (for CI) instead of text
  --html FILE          also write a self-contained HTML report to FILE
  --suggest            per rule, the limits at which 0.1 %, 1 %, 5 % of clients and of requests are limited
  --max-clients N      per-client records kept per rule (default: the rule's keyCapacity, at most 200,000)
  --top N              clients listed per rule in the text summary (default 5)
  --show-keys          show keys built from credentials (user:, key:) as they are, not as fingerprints
  --no-progress        no progress bar, even on a terminal
  -h, --help           this text

  sluice replay --rule "ip 100/60s sliding-counter" access.log.gz
  sluice replay --config gateway.config.json --suggest --html report.html logpush/*.log.gz`;

/**
 * @typedef {object} ReplayArgs
 * @property {boolean} help
 * @property {string[]} inputs
 * @property {string | null} config
 * @property {CliRule[]} rules
 * @property {"auto" | "logpush" | "combined" | "csv"} format
 * @property {Record<string, string> | undefined} columns
 * @property {boolean} json
 * @property {string | null} html
 * @property {boolean} suggest
 * @property {number | null} maxClients
 * @property {number} top
 * @property {boolean} progress
 * @property {boolean} showKeys
 */

/** @param {string} flag @param {string | undefined} value @param {number} min @param {number} max */
function wholeNumber(flag, value, min, max) {
  if (value === undefined) return null;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new ReplayUsageError(flag, `must be a whole number from ${min} to ${max}; got ${JSON.stringify(value)}`);
  return Number(value);
}

/**
 * parseReplayArgs reads the arguments after `replay`.
 * @param {string[]} argv
 * @returns {ReplayArgs}
 */
export function parseReplayArgs(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: "string" },
        rule: { type: "string", multiple: true },
        format: { type: "string" },
        columns: { type: "string" },
        json: { type: "boolean" },
        html: { type: "string" },
        suggest: { type: "boolean" },
        "max-clients": { type: "string" },
        top: { type: "string" },
        "no-progress": { type: "boolean" },
        "show-keys": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    throw new ReplayUsageError("arguments", /** @type {Error} */ (error).message);
  }
  const { values, positionals } = parsed;
  const help = values.help === true;
  const rules = (values.rule ?? []).map((text, i) => parseRule(text, i));
  checkRuleNames(rules);
  const config = values.config ?? null;
  if (!help && config === null && rules.length === 0) throw new ReplayUsageError("arguments", "give --config FILE or at least one --rule");
  if (config !== null && rules.length > 0) throw new ReplayUsageError("arguments", "give --config or --rule, not both");
  const format = values.format ?? "auto";
  if (format !== "auto" && !FORMATS.includes(/** @type {any} */ (format))) throw new ReplayUsageError("--format", `must be one of ${FORMATS.join(", ")}; got ${JSON.stringify(format)}`);
  const columns = values.columns === undefined ? undefined : parseColumnMap(values.columns);
  if (columns !== undefined && format !== "auto" && format !== "csv") throw new ReplayUsageError("--columns", "applies to --format csv only");
  return {
    help,
    inputs: positionals.length === 0 ? ["-"] : positionals,
    config,
    rules,
    format: /** @type {ReplayArgs["format"]} */ (format),
    columns,
    json: values.json === true,
    html: values.html ?? null,
    suggest: values.suggest === true,
    maxClients: wholeNumber("--max-clients", values["max-clients"], 1, 10_000_000),
    top: wholeNumber("--top", values.top, 0, 1000) ?? 5,
    progress: values["no-progress"] !== true,
    showKeys: values["show-keys"] === true,
  };
}
