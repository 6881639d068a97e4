// Figure 8: what the concurrency middleware (worker/src/features/concurrency/) adds to a Hono route, with the
// isolate's memory store and with the Durable Object store, against the same route without it. Each
// request's body is read to the end, which is what releases its slot: a request costs an acquisition
// and a release (two RPCs to the key's object with the durable store).
import { Hono } from "hono";
import { concurrency } from "../../worker/src/features/concurrency/hono.js";
import { keyOf } from "./workload.js";

const CLIENTS = 1000;
const clientKey = (c) => c.req.header("cf-connecting-ip") ?? "unknown";

/** CONCURRENCY_ROUTES: route name -> its middleware (null: the bare route). */
const CONCURRENCY_ROUTES = {
  bare: () => null,
  "concurrency-memory": () => concurrency({ name: "bench-memory", key: clientKey, max: 100, leaseSec: 60 }),
  "concurrency-durable": () =>
    concurrency({ name: "bench-durable", key: clientKey, max: 100, leaseSec: 60, store: "durable", binding: "SLUICE_DO", timeoutMs: 10_000, fallback: false }),
};
export const CONCURRENCY_ROUTE_NAMES = Object.freeze(Object.keys(CONCURRENCY_ROUTES));

let app = null;
// Built inside a request (the middleware's validation instantiates the core, which needs randomness).
function buildApp() {
  const built = new Hono();
  for (const [name, make] of Object.entries(CONCURRENCY_ROUTES)) {
    const middleware = make();
    const handler = (c) => c.text("ok");
    if (middleware === null) built.get(`/${name}`, handler);
    else built.get(`/${name}`, middleware, handler);
  }
  return built;
}

/**
 * timeConcurrency sends requests to `route` through app.fetch, one at a time, from 1,000 clients, for
 * at least minMs after a warm-up; each body is read to the end (the release). Returns requests and ms.
 */
export async function timeConcurrency({ route, minMs }, env, ctx) {
  app ??= buildApp();
  if (!(route in CONCURRENCY_ROUTES)) throw new Error(`unknown concurrency route ${route}`);
  const url = `http://bench/${route}`;
  const clients = Array.from({ length: CLIENTS }, (_, i) => keyOf(i));
  let failed = 0;
  const send = async (i) => {
    const response = await app.fetch(new Request(url, { headers: { "cf-connecting-ip": clients[i % CLIENTS] } }), env, ctx);
    await response.text();
    if (response.status !== 200) failed++;
  };
  for (let i = 0; i < 200; i++) await send(i); // warm-up: the objects exist
  failed = 0;
  let requests = 0;
  const start = performance.now();
  let now = start;
  while (now - start < minMs) {
    await send(requests++);
    now = performance.now();
  }
  if (failed > 0) throw new Error(`route ${route}: ${failed} requests were not answered 200`);
  return { requests, ms: now - start };
}
