// Runs the bench Worker in workerd through miniflare: one isolate per named worker, each reachable
// with call(), and each one's V8 heap readable through workerd's inspector (heapUsed()).
import { createServer } from "node:net";
import { dirname, resolve } from "node:path";
import { Miniflare } from "miniflare";

const root = resolve(dirname(new URL(import.meta.url).pathname), "../..");
export const COMPATIBILITY_DATE = "2026-04-20";

async function freePort() {
  // BENCH_PORT pins the inspector (and miniflare's own listener, BENCH_PORT + 1) on a shared machine
  // where each user has a port range.
  if (process.env.BENCH_PORT) return Number(process.env.BENCH_PORT);
  const server = createServer();
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address();
  await new Promise((done) => server.close(done));
  return port;
}

/** Inspector speaks the DevTools protocol to one isolate, over the WebSocket workerd serves. */
export class Inspector {
  #ws;
  #nextId = 0;
  #pending = new Map();

  static async open(url) {
    const inspector = new Inspector();
    inspector.#ws = new WebSocket(url);
    await new Promise((done, fail) => {
      inspector.#ws.onopen = done;
      inspector.#ws.onerror = () => fail(new Error(`cannot open the inspector at ${url}`));
    });
    inspector.#ws.onmessage = (message) => {
      const data = JSON.parse(message.data);
      const waiting = inspector.#pending.get(data.id);
      if (waiting === undefined) return;
      inspector.#pending.delete(data.id);
      if (data.error) waiting.fail(new Error(`${data.error.message} (${data.error.code})`));
      else waiting.done(data.result);
    };
    return inspector;
  }

  send(method, params = {}) {
    const id = ++this.#nextId;
    return new Promise((done, fail) => {
      this.#pending.set(id, { done, fail });
      this.#ws.send(JSON.stringify({ id, method, params }));
    });
  }

  close() {
    this.#ws.close();
  }
}

/**
 * Workerd is one miniflare instance running the bundled bench Worker under several names.
 * Every name is its own isolate (its own globalThis and V8 heap).
 */
export class Workerd {
  #mf;
  #workers = new Map();
  #inspectorPort;
  #inspectors = new Map();

  /**
   * `routes`: worker name -> miniflare route patterns, for dispatchFetch(). `durableObjects`: worker
   * name -> its Durable Object bindings ({ BINDING: class name exported by the script, or
   * { className, scriptName } for another worker's }). `bindings`: worker name -> plain env values
   * (figure 9's Redis URL and token). `durableObjectsPersist`: a directory for the objects' SQLite
   * files (default: miniflare's temporary directory).
   */
  static async start(scriptPath, names, { routes = {}, durableObjects = {}, bindings = {}, durableObjectsPersist } = {}) {
    const w = new Workerd();
    w.#inspectorPort = await freePort();
    const worker = (name) => ({
      name,
      routes: routes[name],
      durableObjects: Object.fromEntries(
        // A class name, or { className, scriptName } for a class another worker defines.
        Object.entries(durableObjects[name] ?? {}).map(([binding, target]) => [
          binding,
          typeof target === "string" ? { className: target, useSQLite: true } : { ...target, useSQLite: true },
        ]),
      ),
      bindings: bindings[name] ?? {},
      modules: true,
      scriptPath,
      modulesRoot: root,
      modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
      compatibilityDate: COMPATIBILITY_DATE,
      // express-rate-limit imports node:net, node:crypto and node:buffer.
      compatibilityFlags: ["nodejs_compat"],
    });
    w.#mf = new Miniflare({
      inspectorPort: w.#inspectorPort,
      ...(process.env.BENCH_PORT ? { host: "127.0.0.1", port: Number(process.env.BENCH_PORT) + 1 } : {}),
      workers: names.map(worker),
      ...(durableObjectsPersist === undefined ? {} : { durableObjectsPersist }),
    });
    await w.#mf.ready;
    for (const name of names) w.#workers.set(name, await w.#mf.getWorker(name));
    return w;
  }

  /** call GETs /<route>?<params> on worker `name` and returns the JSON answer; throws on an error. */
  async call(name, route, params = {}) {
    const worker = this.#workers.get(name);
    if (worker === undefined) throw new Error(`no worker ${name}`);
    const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]));
    const response = await worker.fetch(`http://bench/${route}?${query}`);
    const body = await response.json();
    if (!response.ok || body.error) throw new Error(`${name} /${route}: ${body.error ?? response.status}`);
    return body;
  }

  /** dispatchFetch sends a request the way miniflare delivers one from outside: routed by its URL. */
  dispatchFetch(url, init) {
    return this.#mf.dispatchFetch(url, init);
  }

  /**
   * heapUsed forces full garbage collections in worker `name`'s isolate and returns the bytes its V8
   * heap then uses. V8 runs an inspector-requested collection as a task on the isolate's thread, which
   * workerd runs only when the isolate next wakes for a request, and the request must come after the
   * inspector thread has handed the task over: so the isolate is pinged until the collection is done.
   */
  async heapUsed(name) {
    const inspector = await this.#inspector(name);
    for (let i = 0; i < 2; i++) {
      let collected = false;
      const collection = inspector.send("HeapProfiler.collectGarbage").then(() => (collected = true));
      for (let tries = 0; !collected; tries++) {
        if (tries === 500) throw new Error(`worker ${name}: no garbage collection after ${tries} pings`);
        await new Promise((done) => setTimeout(done, 20));
        await this.call(name, "ping");
      }
      await collection;
    }
    const usage = await inspector.send("Runtime.getHeapUsage");
    return usage.usedSize;
  }

  /**
   * cpuProfile samples worker `name`'s isolate through the inspector (V8's Profiler domain) while
   * `work()` runs, every `intervalUs` microseconds, and returns the DevTools .cpuprofile object.
   */
  async cpuProfile(name, work, { intervalUs = 50 } = {}) {
    const inspector = await this.#inspector(name);
    await inspector.send("Profiler.enable");
    await inspector.send("Profiler.setSamplingInterval", { interval: intervalUs });
    await inspector.send("Profiler.start");
    let failure = null;
    try {
      await work();
    } catch (error) {
      failure = error;
    }
    const { profile } = await inspector.send("Profiler.stop");
    await inspector.send("Profiler.disable");
    if (failure !== null) throw failure;
    return profile;
  }

  async #inspector(name) {
    let inspector = this.#inspectors.get(name);
    if (inspector === undefined) {
      const targets = await (await fetch(`http://127.0.0.1:${this.#inspectorPort}/json/list`)).json();
      const target = targets.find((t) => t.webSocketDebuggerUrl.endsWith(`/core:user:${name}`));
      if (target === undefined) throw new Error(`no inspector target for worker ${name}`);
      inspector = await Inspector.open(target.webSocketDebuggerUrl);
      this.#inspectors.set(name, inspector);
    }
    return inspector;
  }

  async stop() {
    for (const inspector of this.#inspectors.values()) inspector.close();
    await this.#mf.dispose();
  }
}
