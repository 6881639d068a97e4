// The description every figure is reported with: when, on what, with which versions.
import { readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";

const root = resolve(dirname(new URL(import.meta.url).pathname), "../..");

function packageVersion(name) {
  try {
    return JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return null;
  }
}

function cpuModel() {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8").split("\n").find((l) => l.startsWith("model name"));
    return line === undefined ? cpus()[0]?.model : line.split(":")[1].trim();
  } catch {
    return cpus()[0]?.model ?? "unknown";
  }
}

function loadAverage() {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).map(Number);
  } catch {
    return null;
  }
}

export function describeMachine() {
  return {
    date: new Date().toISOString(),
    cpuModel: cpuModel(),
    nproc: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverageAtStart: loadAverage(),
    node: process.version,
    versions: {
      workerd: packageVersion("workerd"),
      miniflare: packageVersion("miniflare"),
      esbuild: packageVersion("esbuild"),
      hono: packageVersion("hono"),
      "rate-limiter-flexible": packageVersion("rate-limiter-flexible"),
      "hono-rate-limiter": packageVersion("hono-rate-limiter"),
      "express-rate-limit": packageVersion("express-rate-limit"),
    },
  };
}

export function loadAverageNow() {
  return loadAverage();
}
