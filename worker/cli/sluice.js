#!/usr/bin/env node
// The sluice command line (package.json "bin"): `sluice replay` (replay/) and `sluice check` (check.js).
import { runCheck } from "./check.js";
import { runReplay } from "./replay/command.js";

const COMMANDS = [
  "usage: sluice replay [options] [LOG ...]   (sluice replay --help for the options)",
  "       sluice check [gateway.config.json]   validates a gateway configuration as start-up does",
].join("\n");

// A reader that stops early (`sluice replay ... | head`) is not an error of ours.
process.stdout.on("error", (error) => {
  if (/** @type {any} */ (error).code === "EPIPE") process.exit(0);
  throw error;
});

// The replay sends nothing anywhere: a gateway configuration's jwt: keys would fetch a JWKS URL to
// verify a token; here they cannot, and the claim has nothing to say (the shared unknown key).
globalThis.fetch = () => Promise.reject(new TypeError("sluice replay makes no network requests"));

const [command, ...rest] = process.argv.slice(2);
if (command === "replay") {
  process.exitCode = await runReplay(rest, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
} else if (command === "check") {
  process.exitCode = runCheck(rest, { stdout: process.stdout, stderr: process.stderr });
} else if (command === undefined || command === "--help" || command === "-h" || command === "help") {
  process.stdout.write(`${COMMANDS}\n`);
} else {
  process.stderr.write(`sluice: unknown command ${JSON.stringify(command)}\n${COMMANDS}\n`);
  process.exitCode = 2;
}
