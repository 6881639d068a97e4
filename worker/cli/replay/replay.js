// The replay: every line of the inputs, parsed, decided by the engine at its own time, counted.
//
// Lines are replayed in the order they come, at the times they carry. A time earlier than the latest
// already replayed is replayed as it is (Logpush batches overlap by seconds): the core then decides as
// at its latest time for that key, never minting capacity from the step back (docs/core.md, "On whose
// clock"), and the summary counts such lines and the longest step back, so a badly ordered input shows.
// A line that is not a request of its format is counted with its line number, never fatal.
import { ReplayUsageError } from "./errors.js";
import { parseCombinedLine } from "./formats/combined.js";
import { csvParser } from "./formats/csv.js";
import { detectFormat } from "./formats/detect.js";
import { parseLogpushLine } from "./formats/logpush.js";
import { LogpushBatchReader, LogpushLine } from "./formats/logpush-batch.js";
import { readLines } from "./input.js";
import { PeakProbe } from "./peak-probe.js";
import { RuleStats } from "./rule-stats.js";
import { SuggestGrid } from "./suggest.js";

/** @import { LogFormat } from "./formats/detect.js" */
/** @import { LogRecord } from "./formats/record.js" */
/** @import { InputProgress } from "./input.js" */
/** @import { ReplayRule, RequestOutcome, VerdictSink } from "./gateway-engine.js" */

/** How many unparseable lines are listed by number (all are counted). */
export const LISTED_BAD_LINES = 50;
const PROGRESS_EVERY = 1 << 14;
// The per-client table's size per rule when --max-clients is not given: the rule's key capacity, up
// to this many (a record takes about 150 bytes).
export const DEFAULT_MAX_CLIENTS = 200_000;

/**
 * @typedef {object} ReplayEngine
 * @property {"config" | "rules"} kind
 * @property {ReplayRule[]} rules
 * @property {number} lockoutRules
 * @property {(record: LogRecord, sink: VerdictSink) => { outcome: RequestOutcome, blocked: boolean } | Promise<{ outcome: RequestOutcome, blocked: boolean }>} decide
 */

/**
 * @typedef {object} ReplayOptions
 * @property {readonly string[]} inputs Files, "-" for standard input.
 * @property {LogFormat | "auto"} format
 * @property {Record<string, string>} [columns] The CSV column map.
 * @property {ReplayEngine} engine
 * @property {number | null} [maxClients] Per rule; default each rule's key capacity, at most DEFAULT_MAX_CLIENTS.
 * @property {boolean} [suggest]
 * @property {NodeJS.ReadableStream} [stdin]
 * @property {(lines: number, progress: InputProgress) => void} [onProgress]
 */

/**
 * replay runs the inputs through the engine and returns the summary the reports print.
 * @param {ReplayOptions} options
 */
export async function replay({ inputs, format, columns, engine, maxClients = null, suggest = false, stdin, onProgress }) {
  const probe = new PeakProbe();
  const stats = engine.rules.map(
    (rule) => new RuleStats(rule, { probe, maxClients: maxClients ?? Math.min(rule.keyCapacity, DEFAULT_MAX_CLIENTS), suggest: suggest ? new SuggestGrid(rule) : null }),
  );
  const outcomes = { checked: 0, blocked: 0, bad_path: 0, no_route: 0, method: 0, deny_list: 0, allow_list: 0 };
  const lines = { total: 0, blank: 0, unparseable: 0, replayed: 0 };
  /** @type {string[]} */
  const badLines = [];
  const time = { firstMs: Infinity, lastMs: -Infinity, outOfOrder: 0, longestStepBackMs: 0 };
  /** @type {Record<string, string>} */
  const formats = {};
  const progress = { read: 0, total: null };

  let nowMs = 0;
  /** @type {VerdictSink} */
  const sink = (rule, key, event, cost) => stats[rule].observe(key, event, cost, nowMs);

  /** @type {string | null} */
  let source = null;
  /** @type {((line: string) => LogRecord | null) | null} */
  let parse = null;
  let latestMs = -Infinity;
  /** @type {LogpushBatchReader | null} */
  let logpush = null;
  for await (const batch of readLines(inputs, /** @type {InputProgress} */ (progress), stdin)) {
    if (batch.source !== source) {
      source = batch.source;
      parse = null;
    }
    // Logpush lines are read a batch at a time by the core (formats/logpush-batch.js), once the
    // format is known; the lines it does not answer for, and every other format, line by line below.
    const scanned = parse === parseLogpushLine && (logpush ??= new LogpushBatchReader()).read(batch);
    for (let i = 0; i < batch.count; i++) {
      lines.total++;
      if ((lines.total & (PROGRESS_EVERY - 1)) === 0) onProgress?.(lines.total, progress);
      const kind = scanned ? /** @type {LogpushBatchReader} */ (logpush).kind(i) : LogpushLine.FALLBACK;
      /** @type {LogRecord | null} */
      let record;
      if (kind === LogpushLine.RECORD) record = /** @type {LogpushBatchReader} */ (logpush).record(i);
      else if (kind === LogpushLine.BLANK) {
        lines.blank++;
        continue;
      } else if (kind !== LogpushLine.FALLBACK) record = null;
      else {
        const line = batch.text(i);
        if (line.length === 0 || (line.charCodeAt(0) <= 32 && line.trim() === "")) {
          lines.blank++;
          continue;
        }
        if (parse === null) {
          const chosen = format === "auto" ? detectFormat(line) : format;
          formats[batch.source] = chosen;
          if (chosen === "csv") {
            // The first line of a CSV input names its columns.
            parse = csvParser(line, columns);
            continue;
          }
          parse = chosen === "logpush" ? parseLogpushLine : parseCombinedLine;
        }
        record = parse(line);
      }
      if (record === null) {
        lines.unparseable++;
        if (badLines.length < LISTED_BAD_LINES) badLines.push(`${batch.source}:${batch.firstLine + i}`);
        continue;
      }
      lines.replayed++;
      nowMs = record.timeMs;
      if (nowMs < latestMs) {
        time.outOfOrder++;
        if (latestMs - nowMs > time.longestStepBackMs) time.longestStepBackMs = latestMs - nowMs;
      } else latestMs = nowMs;
      if (nowMs < time.firstMs) time.firstMs = nowMs;
      if (nowMs > time.lastMs) time.lastMs = nowMs;
      // The --rule engine answers synchronously unless a key had to be hashed: no promise per line.
      let result = engine.decide(record, sink);
      if (result instanceof Promise) result = await result;
      outcomes[result.outcome]++;
      if (result.blocked) outcomes.blocked++;
    }
  }
  if (columns !== undefined && !Object.values(formats).includes("csv")) {
    throw new ReplayUsageError("--columns", "applies to CSV input only, and no input was CSV");
  }
  onProgress?.(lines.total, progress);
  return {
    engine: engine.kind,
    inputs: [...inputs],
    formats,
    lines,
    badLines,
    time: lines.replayed === 0 ? null : time,
    requests: outcomes,
    lockoutRulesNotReplayed: engine.lockoutRules,
    peakProbeSkipped: probe.skipped,
    rules: stats.map((s) => s.summary()),
  };
}
