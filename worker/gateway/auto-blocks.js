// The gateway's auto-blocking rules (a rule's `autoBlock`): their counters in /metrics, the blocks in
// force for the dashboard, and the blocks admin endpoint, `<admin.path>/blocks`, which lists the blocks
// in force (the deployment's on the durable and Redis stores) and lifts one (the library's blocksAdmin: the admin token, fail closed; a lift is logged with a fingerprint of
// the key, never the key).
import { blocksAdmin, listBlocks } from "../src/features/auto-block/admin.js";

/** @import { GatewayConfig, GatewayRoute } from "./config.js" */

/** The path below admin.path where the blocks admin endpoint answers. */
export const BLOCKS_SUBPATH = "/blocks";

const FAMILIES = /** @type {const} */ ([
  ["sluice_autoblock_strikes_total", "strikes", "429s of an auto-blocking rule, each a strike of its key."],
  ["sluice_autoblock_blocks_started_total", "blocksStarted", "Blocks started: keys refused `after` times within the span, then blocked."],
  ["sluice_autoblock_refused_total", "refusedWhileBlocked", "Requests refused because their key was blocked by an auto-blocking rule."],
  ["sluice_autoblock_lifted_total", "lifted", "Blocks lifted through the blocks admin endpoint."],
  ["sluice_autoblock_failures_total", "failures", "Strikes or block checks the store failed to answer (the rule then decided alone)."],
]);

/**
 * The route's rule groups (store groups) that hold an auto-blocking rule.
 * @param {GatewayRoute} route
 */
function blockingGroups(route) {
  return route.storeGroups.filter((group) => group.some((i) => /** @type {any} */ (route.rules[i]).autoBlock !== undefined));
}

/**
 * createAutoBlocks returns the blocks admin handler and the /metrics families of `config`'s
 * auto-blocking rules; `limiterFor(route)(ruleIndexes)` is the gateway's (cached) limiter of a group.
 * `log` receives the audit lines.
 * @param {GatewayConfig} config
 * @param {(route: GatewayRoute) => (ruleIndexes: readonly number[]) => any} limiterFor
 * @param {(line: string) => void} log
 */
export function createAutoBlocks(config, limiterFor, log) {
  const groups = config.routes.flatMap((route) => blockingGroups(route).map((group) => ({ route, group })));
  // The limiters are made on first use (the gateway's own cache): a lift reaches a rule's store even in
  // an isolate that has not served it yet.
  // (A limiterFactory of a test's own may give limiters without blocks: they have none to show.)
  const limiters = () => groups.map(({ route, group }) => limiterFor(route)(group)).filter((limiter) => limiter.blocks !== undefined);
  /** @type {((request: Request, env: any, ctx: any) => Promise<Response>) | null} */
  let handler = null;
  return {
    /** Whether any rule auto-blocks (else the endpoint is not served). */
    enabled: groups.length > 0,
    /** @param {Request} request @param {any} env @param {any} ctx */
    serve(request, env, ctx) {
      const serve = (handler ??= blocksAdmin({ limiters: limiters(), tokenSecret: /** @type {{ tokenSecret: string }} */ (config.admin).tokenSecret, log }));
      return serve(request, env, ctx);
    },
    /**
     * The blocks in force (the deployment's on the durable and Redis stores), ending soonest first.
     * @param {any} env
     */
    list(env) {
      return groups.length === 0 ? Promise.resolve([]) : listBlocks(limiters(), env);
    },
    /** @returns {import("./metrics.js").MetricFamily[]} */
    families() {
      if (groups.length === 0) return [];
      // A rule may be in several routes (one name, one rule): its counters add up.
      const byRule = new Map();
      for (const limiter of limiters()) {
        for (const counters of limiter.blocks.counters()) {
          const sum = byRule.get(counters.rule) ?? Object.fromEntries(FAMILIES.map(([, field]) => [field, 0]));
          for (const [, field] of FAMILIES) sum[field] += counters[field];
          byRule.set(counters.rule, sum);
        }
      }
      return FAMILIES.map(([name, field, help]) => ({
        name,
        help,
        type: /** @type {const} */ ("counter"),
        samples: [...byRule].map(([rule, sum]) => ({ labels: { rule }, value: sum[field] })),
      }));
    },
  };
}
