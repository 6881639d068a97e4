// `sluice replay`: reads the arguments, builds the engine (a gateway configuration or --rule rules),
// replays the inputs and prints the summary; --html writes the page too. Exit codes: 0 done, 2 the
// command line or the configuration is wrong (the message names the flag or field), 1 anything else
// (an input that cannot be read).
import { readFileSync, writeFileSync } from "node:fs";
import { parseReplayArgs, USAGE } from "./args.js";
import { ReplayUsageError } from "./errors.js";
import { createGatewayEngine } from "./gateway-engine.js";
import { inputSize } from "./input.js";
import { ConfigError } from "./library.js";
import { progressBar } from "./progress.js";
import { redactKey, redactResult } from "./redact-key.js";
import { replay } from "./replay.js";
import { htmlReport } from "./report-html.js";
import { jsonReport } from "./report-json.js";
import { textReport } from "./report-text.js";
import { createRuleEngine } from "./rule-engine.js";

/**
 * @typedef {object} CommandIo
 * @property {NodeJS.ReadableStream} stdin
 * @property {NodeJS.WriteStream | { write(text: string): unknown, isTTY?: boolean }} stdout
 * @property {NodeJS.WriteStream | { write(text: string): unknown, isTTY?: boolean }} stderr
 */

/**
 * runReplay runs `sluice replay` with `argv` (the arguments after "replay"); resolves to the exit code.
 * @param {string[]} argv
 * @param {CommandIo} io
 * @returns {Promise<number>}
 */
export async function runReplay(argv, io) {
  let args;
  let engine;
  try {
    args = parseReplayArgs(argv);
    if (args.help) {
      io.stdout.write(`${USAGE}\n`);
      return 0;
    }
    engine = args.config === null ? createRuleEngine(args.rules) : createGatewayEngine(readConfig(args.config), args.config);
  } catch (error) {
    if (error instanceof ReplayUsageError || error instanceof ConfigError) {
      io.stderr.write(`sluice replay: ${error.message}\n${error instanceof ReplayUsageError ? `\n${USAGE}\n` : ""}`);
      return 2;
    }
    throw error;
  }
  const bar = args.progress ? progressBar(/** @type {NodeJS.WriteStream} */ (io.stderr), safeInputSize(args.inputs)) : { onProgress: undefined, done() {} };
  let result;
  try {
    result = await replay({ inputs: args.inputs, format: args.format, columns: args.columns, engine, maxClients: args.maxClients, suggest: args.suggest, stdin: io.stdin, onProgress: bar.onProgress });
  } catch (error) {
    bar.done();
    if (error instanceof ReplayUsageError) {
      io.stderr.write(`sluice replay: ${error.message}\n`);
      return 2;
    }
    const code = /** @type {any} */ (error)?.code;
    if (typeof code === "string" && (code.startsWith("E") || code.startsWith("Z_"))) {
      io.stderr.write(`sluice replay: cannot read the input: ${/** @type {Error} */ (error).message}\n`);
      return 1;
    }
    throw error;
  }
  bar.done();
  const shown = redactResult(result, args.showKeys ? (key) => key : redactKey);
  io.stdout.write(args.json ? jsonReport(shown) : textReport(shown, { top: args.top }));
  if (args.html !== null) {
    writeFileSync(args.html, htmlReport(shown));
    if (!args.json) io.stdout.write(`\nreport written to ${args.html}\n`);
  }
  return 0;
}

/** @param {string} path */
function readConfig(path) {
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ReplayUsageError("--config", `cannot read ${path}: ${/** @type {any} */ (error).code ?? /** @type {Error} */ (error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ReplayUsageError("--config", `${path} is not valid JSON (${/** @type {Error} */ (error).message})`);
  }
}

/** @param {readonly string[]} inputs */
function safeInputSize(inputs) {
  try {
    return inputSize(inputs);
  } catch {
    return null; // a missing file: replay() reports it
  }
}
