// The dashboard's Durable Object: one per deployment (report.js names it), where every isolate's
// counters add up (aggregate.js). Bound as SLUICE_DASHBOARD in wrangler.toml; the Worker's main module
// exports it. Its state is written to storage after each report, so a restart of the object loses
// nothing the isolates had reported.
import { DurableObject } from "cloudflare:workers";
import { DeploymentCounters } from "./aggregate.js";

const STATE_KEY = "deployment-counters";

export class SluiceDashboardObject extends DurableObject {
  /** @type {DeploymentCounters} */
  #counters = new DeploymentCounters();

  /** @param {DurableObjectState} ctx @param {unknown} env */
  constructor(ctx, env) {
    super(ctx, /** @type {any} */ (env));
    ctx.blockConcurrencyWhile(async () => {
      const stored = await ctx.storage.get(STATE_KEY);
      if (stored !== undefined) this.#counters = new DeploymentCounters(stored);
    });
  }

  /**
   * Takes an isolate's report (report.js). Returns whether it was well formed.
   * @param {import("./aggregate.js").IsolateReport} report
   */
  async report(report) {
    const taken = this.#counters.ingest(report, Date.now());
    // Even a stale report may have added denied keys.
    await this.ctx.storage.put(STATE_KEY, this.#counters.toJSON());
    return taken;
  }

  /** The deployment's view, for the dashboard page. */
  view() {
    return this.#counters.view(Date.now());
  }
}
