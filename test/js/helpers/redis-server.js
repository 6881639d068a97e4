// Starts a real redis-server (Debian's package; scripts/ensure-tools.sh installs it) on a free loopback
// port for one test file, and stops it. Nothing is persisted (--save "" --appendonly no).
//
// A run that died without stopping its server (a killed test process) leaves a pidfile behind in the
// temporary directory, named after the test process that started it; the next start stops every such
// server whose test process is gone, so leftovers never pile up (and a server of a test file running
// concurrently is left alone).
//
// Ports: SLUICE_TEST_PORTS="8780-8789" restricts the search to a range (on shared machines); by
// default the system picks a free port.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PIDFILE = /^sluice-test-redis-(\d+)-(\d+)\.pid$/;

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Stops servers whose test process is gone (only processes that are redis-server, by their pidfile).
function stopLeftovers() {
  for (const name of readdirSync(tmpdir())) {
    const match = PIDFILE.exec(name);
    if (match === null || alive(Number(match[1]))) continue;
    const file = join(tmpdir(), name);
    const pid = Number(readFileSync(file, "utf8").trim());
    const command = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, "utf8") : "";
    if (pid > 0 && command.includes("redis-server")) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // gone meanwhile
      }
    }
    rmSync(file, { force: true });
  }
}

function portFree(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** freePort returns a loopback port nothing listens on (in SLUICE_TEST_PORTS when set). */
export async function freePort(exclude = []) {
  const range = process.env.SLUICE_TEST_PORTS;
  if (range !== undefined && range !== "") {
    const [low, high] = range.split("-").map(Number);
    // Start at a random place so that concurrently running test files rarely pick the same port.
    const span = high - low + 1;
    const start = Math.floor(Math.random() * span);
    for (let i = 0; i < span; i++) {
      const port = low + ((start + i) % span);
      if (!exclude.includes(port) && (await portFree(port))) return port;
    }
    throw new Error(`no free port in SLUICE_TEST_PORTS=${range}`);
  }
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function answers(port) {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString().startsWith("+PONG"));
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * startRedis starts redis-server on a free loopback port; resolves with { port, stop } once it answers
 * PING. stop() ends it (SIGTERM) and waits for it to exit.
 */
export async function startRedis({ exclude = [] } = {}) {
  stopLeftovers();
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort(exclude);
    const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    const pidfile = join(tmpdir(), `sluice-test-redis-${process.pid}-${port}.pid`);
    writeFileSync(pidfile, String(child.pid));
    const exited = new Promise((resolve) => child.once("exit", resolve));
    let ready = false;
    for (let i = 0; i < 100 && child.exitCode === null; i++) {
      if (await answers(port)) {
        ready = true;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(pidfile, { force: true });
    };
    if (ready) return { port, stop };
    await stop(); // the port was taken meanwhile, or the server failed: try another
  }
  throw new Error("redis-server did not start (is it installed? scripts/ensure-tools.sh installs it)");
}
