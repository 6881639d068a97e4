// `sluice check [FILE]`: validates a gateway configuration offline, as the gateway does at start-up
// (worker/index.js: resolveConfig, then createGateway, which also builds every rule's limiter), with
// the same messages: exit 0 when it would start, 1 with the message naming the field when it would not,
// 2 for a usage error. What needs the deployment (secrets, bindings) is not checked: it is not here.
import { readFileSync } from "node:fs";
import path from "node:path";
import { ConfigError, validateConfig } from "../gateway/config.js";
import { createGateway } from "../gateway/gateway.js";

const USAGE = "usage: sluice check [gateway.config.json]   validates a gateway configuration as start-up does";

/**
 * runCheck runs `sluice check` with the arguments after "check"; returns the exit code.
 * @param {string[]} args
 * @param {{ stdout: { write(text: string): unknown }, stderr: { write(text: string): unknown } }} io
 * @returns {number}
 */
export function runCheck(args, { stdout, stderr }) {
  if (args.includes("--help") || args.includes("-h")) {
    stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (args.length > 1 || args.some((arg) => arg.startsWith("-"))) {
    stderr.write(`sluice check: one configuration file at a time\n${USAGE}\n`);
    return 2;
  }
  const file = args[0] ?? "gateway.config.json";
  // Named as start-up names the bundled file: its base name.
  const source = path.basename(file);
  let raw;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    const problem = error instanceof SyntaxError ? `is not valid JSON (${error.message})` : `cannot be read (${/** @type {any} */ (error).code ?? error})`;
    stderr.write(`sluice check: ${file} ${problem}\n`);
    return 1;
  }
  try {
    const config = validateConfig(raw, source);
    createGateway(config, { log() {} });
    const rules = config.routes.reduce((sum, route) => sum + route.rules.length, 0);
    const count = (n, noun) => `${n} ${noun}${n === 1 ? "" : "s"}`;
    stdout.write(`${file}: valid (${count(config.routes.length, "route")}, ${count(rules, "rule")})\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    stderr.write(`${error.message}\n`);
    return 1;
  }
}
