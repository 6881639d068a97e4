// A Node module-loader hook: `cloudflare:workers` resolves to a stand-in with the names sluice's
// modules import from it (class DurableObject, class WorkerEntrypoint, env), so that Node can load
// a module such as sluice/durable-object to list its exports. Nothing in the stand-in runs a Worker:
// tests that need the runtime use miniflare. Registered by workers-stub.js.
const STUB = [
  "export class DurableObject { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }",
  "export class WorkerEntrypoint { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }",
  "export const env = {};",
].join("\n");

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "cloudflare:workers") {
    return { url: `data:text/javascript,${encodeURIComponent(STUB)}`, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
