// Which format a log is in, from its first non-empty line, when --format does not say.
import { parseCombinedLine } from "./combined.js";

/** @typedef {"logpush" | "combined" | "csv"} LogFormat */

/** The formats --format accepts. */
export const FORMATS = /** @type {readonly LogFormat[]} */ (Object.freeze(["logpush", "combined", "csv"]));

/**
 * detectFormat names the format of a log whose first non-empty line is `line`: a JSON object is
 * Logpush, a line the combined parser reads is combined, anything else a CSV header.
 * @param {string} line
 * @returns {LogFormat}
 */
export function detectFormat(line) {
  const text = line.trimStart();
  if (text.startsWith("{")) return "logpush";
  if (parseCombinedLine(text) !== null) return "combined";
  return "csv";
}
