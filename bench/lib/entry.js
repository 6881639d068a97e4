// How the bench's Node scripts start: they talk to workerd's inspector over a WebSocket, global in
// Node 22 but behind a flag in Node 20, so on 20 the script re-runs itself with the flag.
import { spawnSync } from "node:child_process";

/** runScript runs `main` (async), or re-runs this process with WebSocket enabled first. */
export function runScript(main) {
  if (typeof WebSocket === "undefined" && !process.execArgv.includes("--experimental-websocket")) {
    const child = spawnSync(process.execPath, ["--experimental-websocket", ...process.argv.slice(1)], { stdio: "inherit" });
    process.exit(child.status ?? 1);
  }
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
