#!/usr/bin/env node
// The sluice command line (package.json "bin"). One command so far: `sluice replay` (replay/).
import { runReplay } from "./replay/command.js";

const COMMANDS = "usage: sluice replay [options] [LOG ...]   (sluice replay --help for the options)";

const [command, ...rest] = process.argv.slice(2);
if (command === "replay") {
  process.exitCode = await runReplay(rest, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
} else if (command === undefined || command === "--help" || command === "-h" || command === "help") {
  process.stdout.write(`${COMMANDS}\n`);
} else {
  process.stderr.write(`sluice: unknown command ${JSON.stringify(command)}\n${COMMANDS}\n`);
  process.exitCode = 2;
}
