// The demo Worker: GET /data, 5 requests per minute per client IP (fixed window aligned to the epoch).
export { SluiceDurableObject } from "./stores/durable-object.js";
import wasmModule from "../../wasm-bindings/sluice.wasm";
import { SluiceCore } from "../../wasm-bindings/sluice.js";

const STATE = Symbol.for("sluice.isolate");

function isolateCore() {
  let state = globalThis[STATE];
  if (state === undefined) {
    const core = SluiceCore.instantiate(wasmModule);
    const data = core.addRule({ algorithm: "fixed-window", limit: 5, windowMs: 60_000, keyCapacity: 100_000 });
    state = { core, rules: { data } };
    globalThis[STATE] = state;
  }
  return state;
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname !== "/data") return new Response("not found\n", { status: 404 });
    const { core, rules } = isolateCore();
    const ip = request.headers.get("cf-connecting-ip") ?? "unknown";
    const d = core.check(rules.data, `ip:${ip}`, 1, Date.now());
    const headers = {
      "x-ratelimit-limit": String(d.limit),
      "x-ratelimit-remaining": String(d.remaining),
      "x-ratelimit-reset": String(Math.ceil(d.resetMs / 1000)),
    };
    if (!d.allowed) {
      headers["retry-after"] = String(Math.ceil(d.retryAfterMs / 1000));
      return Response.json({ error: "too many requests" }, { status: 429, headers });
    }
    return Response.json({ data: "ok" }, { headers });
  },
};
