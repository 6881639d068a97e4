// The bench Worker. bench/run.js starts one isolate per limiter (so heaps are measured apart and one
// subject's garbage never slows another) and drives it through these GET routes, each answering JSON.
import wasmModule from "../../wasm-bindings/sluice.wasm";
import { SluiceCore } from "../../wasm-bindings/sluice.js";
import { SUBJECTS } from "./subjects.js";
import { HOT_KEY, KEY_STRINGS, ORDER_LENGTH, arrivalOrder, hotKeyOf, keyList, keyOf } from "./workload.js";
import { asyncLoops, syncLoops } from "bench:timed-loops";
import { buildApp, ROUTES, sluiceStatus } from "./hono-app.js";
import { timeDurable } from "./durable.js";
import { countRedis, timeRedis } from "./redis.js";
import { CONCURRENCY_ROUTE_NAMES, timeConcurrency } from "./concurrency.js";
import { timeLeases } from "./leases.js";

// Figure 7's objects, bound only in the isolate that drives them (bench/run.js).
export { BenchEchoObject, BenchMemoryObject, SluiceDurableObject } from "./durable.js";

const STATE = Symbol.for("sluice.bench");
function state() {
  globalThis[STATE] ??= { instances: new Map(), orders: new Map(), keys: new Map(), app: null };
  return globalThis[STATE];
}

function numberParam(params, name) {
  const value = Number(params.get(name));
  if (!Number.isFinite(value)) throw new Error(`query parameter ${name} must be a number`);
  return value;
}

function instance(params) {
  const slot = params.get("slot");
  const found = state().instances.get(slot);
  if (found === undefined) throw new Error(`no instance in slot ${slot}`);
  return found;
}

function subjectOf(name) {
  const subject = SUBJECTS[name];
  if (subject === undefined) throw new Error(`unknown subject ${name}`);
  return subject;
}

// A hot key is one key repeated: the order is all zeros. `strings` (KEY_STRINGS) says whether each
// decision's key string is built afresh or taken from a list built once.
function workload(keyCount, distribution, strings) {
  const s = state();
  if (!KEY_STRINGS.includes(strings)) throw new Error(`strings must be one of ${KEY_STRINGS.join(", ")}`);
  if (distribution === "hot") {
    const order = s.orders.get("hot") ?? s.orders.set("hot", new Uint32Array(ORDER_LENGTH)).get("hot");
    const reused = [HOT_KEY];
    return { keyAt: strings === "fresh" ? hotKeyOf : (i) => reused[i], order };
  }
  const id = `${distribution}:${keyCount}`;
  if (!s.orders.has(id)) s.orders.set(id, arrivalOrder(keyCount, distribution));
  if (strings === "fresh") return { keyAt: keyOf, order: s.orders.get(id) };
  if (!s.keys.has(keyCount)) s.keys.set(keyCount, keyList(keyCount));
  const keys = s.keys.get(keyCount);
  return { keyAt: (i) => keys[i], order: s.orders.get(id) };
}

// The timing loop of one scenario, a copy no other scenario of this isolate runs (bench/lib/bundle.js).
function loopFor(scenario, asynchronous) {
  const s = state();
  s.loops ??= new Map();
  if (!s.loops.has(scenario)) {
    if (s.loops.size === syncLoops.length) throw new Error(`more than ${syncLoops.length} timed scenarios in one isolate`);
    s.loops.set(scenario, s.loops.size);
  }
  const index = s.loops.get(scenario);
  return asynchronous ? asyncLoops[index] : syncLoops[index];
}

const routes = {
  ping: () => ({ ok: true }),

  // Creates a limiter of `subject` in `slot` (replacing what was there).
  create(params) {
    const name = params.get("subject");
    const subject = subjectOf(name);
    const config = {
      limit: numberParam(params, "limit"),
      windowMs: numberParam(params, "windowMs"),
      keyCapacity: numberParam(params, "keyCapacity"),
    };
    state().instances.set(params.get("slot"), { name, subject, limiter: subject.make(config) });
    return { created: name };
  },

  drop(params) {
    const s = state();
    s.instances.delete(params.get("slot"));
    // Key lists and orders are large; drop them too when asked, before a heap reading.
    if (params.get("workloads") === "1") {
      s.orders.clear();
      s.keys.clear();
    }
    return { dropped: true };
  },

  // Inserts keys [from, to), each built afresh, so the limiter holds strings of its own.
  async populate(params) {
    const { subject, limiter } = instance(params);
    const from = numberParam(params, "from");
    const to = numberParam(params, "to");
    let admitted = 0;
    if (subject.asynchronous) {
      for (let i = from; i < to; i++) if (await limiter.decide(keyOf(i))) admitted++;
    } else {
      for (let i = from; i < to; i++) if (limiter.decide(keyOf(i))) admitted++;
    }
    return { admitted };
  },

  // Times decisions over `keys` keys in `dist` order ("hot", "uniform", "zipf") for at least minMs,
  // after a warm-up of a quarter of that, with key strings built per decision or reused (`strings`).
  // `phase`: "warm" runs the warm-up alone, "timed" the timed loop alone (bench/run.js sends the spin
  // request between them), and by default both.
  async time(params) {
    const { subject, limiter } = instance(params);
    const { keyAt, order } = workload(numberParam(params, "keys"), params.get("dist"), params.get("strings") ?? "fresh");
    const minMs = numberParam(params, "minMs");
    const phase = params.get("phase");
    const run = loopFor(`${params.get("slot")}:${params.get("dist")}:${params.get("strings") ?? "fresh"}`, subject.asynchronous);
    if (phase !== "timed") {
      const warm = await run(limiter.decide, keyAt, order, minMs / 4);
      if (phase === "warm") return warm;
    }
    return await run(limiter.decide, keyAt, order, minMs);
  },

  // Unrelated hot code, run untimed between a warm-up and its timed loop: V8 may compile a function
  // optimised during a short warm-up and leave the code uninstalled until the isolate next enters
  // it from a fresh request; a request of other hot code first gets it installed. It also tells
  // bench/run.js which workerd thread runs this isolate (the one that ran this spin).
  spin(params) {
    const ms = numberParam(params, "ms");
    const start = performance.now();
    let x = 0x9e3779b9;
    let rounds = 0;
    while (performance.now() - start < ms) {
      for (let i = 0; i < 4096; i++) x = Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + i;
      rounds++;
    }
    return { rounds, x: x >>> 0 };
  },

  // What a limiter holds: its key count and, for sluice, its linear memory and table.
  hold(params) {
    const { limiter } = instance(params);
    return {
      keysHeld: limiter.keysHeld(),
      linearMemoryBytes: limiter.linearMemoryBytes?.() ?? null,
      table: limiter.stats?.() ?? null,
    };
  },

  // Figure 4: `count` new keys into a new limiter, in this one request, until the first error.
  async burst(params) {
    const name = params.get("subject");
    const subject = subjectOf(name);
    const count = numberParam(params, "count");
    const limiter = subject.make({ limit: 100, windowMs: 3_600_000, keyCapacity: count });
    let inserted = 0;
    let failure = null;
    const start = performance.now();
    try {
      for (let i = 0; i < count; i++) {
        const decided = limiter.decide(keyOf(i));
        if (subject.asynchronous) await decided;
        inserted++;
      }
    } catch (e) {
      failure = String(e?.message ?? e);
    }
    return { inserted, failure, ms: performance.now() - start };
  },

  // Figure 6: `count` fresh instances (instantiate + one rule + one check), and the first one apart.
  instantiate(params) {
    const count = numberParam(params, "count");
    const once = () => {
      const core = SluiceCore.instantiate(wasmModule);
      const rule = core.addRule({ algorithm: "fixed-window", limit: 10, windowMs: 60_000, keyCapacity: 1000 });
      return core.check(rule, HOT_KEY, 1, Date.now()).allowed;
    };
    const firstStart = performance.now();
    once();
    const firstMs = performance.now() - firstStart;
    const start = performance.now();
    for (let i = 0; i < count; i++) once();
    return { count, ms: performance.now() - start, firstMs };
  },

  // Figure 5, inside one request: `count` requests through app.fetch on `route`, from 1,000 clients.
  // Each gets this request's env and ctx, as a Worker's `export default app` does: without them
  // Hono's c.executionCtx throws, and a middleware that asks for it would pay for an Error per request.
  async hono(params, env, ctx) {
    const s = state();
    s.app ??= buildApp();
    const route = params.get("route");
    const count = numberParam(params, "count");
    const clients = Array.from({ length: 1000 }, (_, i) => keyOf(i));
    const url = `http://bench/${route}`;
    const send = async (i) => {
      const response = await s.app.fetch(new Request(url, { headers: { "cf-connecting-ip": clients[i % 1000] } }), env, ctx);
      return response.status;
    };
    for (let i = 0; i < Math.min(count, 2000); i++) await send(i); // warm-up
    let ok = 0;
    const start = performance.now();
    for (let i = 0; i < count; i++) if ((await send(i)) === 200) ok++;
    return { count, ok, ms: performance.now() - start };
  },

  // Figure 7: requests of `rules` checks through the Durable Object store (or its baselines).
  durable(params, env) {
    return timeDurable(
      {
        target: params.get("target"),
        rules: numberParam(params, "rules"),
        shards: numberParam(params, "shards"),
        spread: params.get("spread") === "1",
        inFlight: numberParam(params, "inFlight"),
        minMs: numberParam(params, "minMs"),
      },
      env,
    );
  },

  // Figure 9: decisions through the Redis store or @upstash/ratelimit (bench/worker/redis.js).
  redis(params, env) {
    const common = { subject: params.get("subject"), algorithm: params.get("algorithm"), limit: numberParam(params, "limit"), run: params.get("run") };
    const inFlight = params.has("inFlight") ? numberParam(params, "inFlight") : 1;
    if (params.get("mode") === "count") {
      return countRedis({ ...common, keys: numberParam(params, "keys"), count: numberParam(params, "count"), inFlight }, env);
    }
    return timeRedis({ ...common, keys: params.get("keys"), minMs: numberParam(params, "minMs"), inFlight }, env);
  },

  // Figure 8: a Hono route with the concurrency middleware (memory or durable store), or without.
  concurrency(params, env, ctx) {
    return timeConcurrency({ route: params.get("route"), minMs: numberParam(params, "minMs") }, env, ctx);
  },

  concurrencyRoutes: () => ({ routes: CONCURRENCY_ROUTE_NAMES }),

  // Figure 10: one rule shared by the isolates that run this at once, through memory, durable or leases.
  leases(params, env) {
    return timeLeases(
      {
        target: params.get("target"),
        dist: params.get("dist"),
        algorithm: params.get("algorithm") ?? "fixed-window",
        limit: numberParam(params, "limit"),
        windowMs: numberParam(params, "windowMs"),
        runId: params.get("runId"),
        inFlight: numberParam(params, "inFlight"),
        minMs: numberParam(params, "minMs"),
        warmUpMs: numberParam(params, "warmUpMs"),
        isolate: numberParam(params, "isolate"),
      },
      env,
    );
  },

  honoRoutes: () => ({ routes: Object.keys(ROUTES).filter((r) => ROUTES[r] !== undefined), sluiceStatus }),
};

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const [, first, second] = url.pathname.split("/");
    // Figure 5 through dispatchFetch: /app/<route> is the Hono app itself.
    if (first === "app") {
      const s = state();
      s.app ??= buildApp();
      const inner = new URL(`/${second}`, url);
      return s.app.fetch(new Request(inner, request), env, ctx);
    }
    const route = routes[first];
    if (route === undefined) return Response.json({ error: `no route ${url.pathname}` }, { status: 404 });
    try {
      return Response.json(await route(url.searchParams, env, ctx));
    } catch (e) {
      return Response.json({ error: String(e?.stack ?? e) }, { status: 500 });
    }
  },
};
