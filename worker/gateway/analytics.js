// Data points for Workers Analytics Engine, where the counts of every isolate add up. Written only
// when the configured binding exists, and only after the response is on its way (ctx.waitUntil).
//
// Schema (blobN / doubleN are Analytics Engine's column names):
//   request point: index1 = route; blob1 = "request", blob2 = route, blob3 = decision, blob4 = status;
//                  double1 = 1, double2 = status, double3 = upstream status (0: none), double4 = upstream ms
//   rule point:    index1 = route; blob1 = "rule", blob2 = route, blob3 = rule, blob4 = event, blob5 = mode;
//                  double1 = 1, double2 = remaining, double3 = limit, double4 = near limit (0/1),
//                  double5 = decided by a fallback store (0/1), double6 = charged after the response (0/1; only on
//                  the points of a rule that counts on the response, countWhen or costFrom)

/** @import { GatewayRoute } from "./config.js" */
/** @import { RuleVerdict } from "./decide.js" */

// Analytics Engine bounds the points one invocation may write (250 today, 25 in earlier limits); a
// route has at most 16 rules, so one request point plus one per rule stays under either.
export const MAX_POINTS_PER_REQUEST = 25;

/** The dataset binding named by the configuration, or null when the Worker has none. @param {any} env @param {string} bindingName @returns {AnalyticsEngineDataset | null} */
export function analyticsDataset(env, bindingName) {
  const dataset = env?.[bindingName];
  return typeof dataset?.writeDataPoint === "function" ? dataset : null;
}

/** The data points of one request: `summary` is the gateway's log record of it. @param {GatewayRoute} route @param {readonly RuleVerdict[]} verdicts @param {Record<string, any>} summary @returns {AnalyticsEngineDataPoint[]} */
export function analyticsPoints(route, verdicts, summary) {
  const points = [
    {
      indexes: [route.prefix],
      blobs: ["request", route.prefix, summary.decision, String(summary.status)],
      doubles: [1, summary.status, summary.upstreamStatus ?? 0, summary.upstreamLatencyMs ?? 0],
    },
  ];
  for (const verdict of verdicts) {
    points.push({
      indexes: [route.prefix],
      blobs: ["rule", route.prefix, verdict.rule.name, verdict.event, verdict.mode],
      doubles: [
        1,
        verdict.decision?.remaining ?? 0,
        verdict.decision?.limit ?? 0,
        verdict.nearLimit ? 1 : 0,
        verdict.fallback ? 1 : 0,
        // Only a rule that counts on the response has a sixth.
        ...(verdict.rule.countWhen !== undefined || verdict.rule.costFrom !== undefined ? [verdict.charged === true ? 1 : 0] : []),
      ],
    });
  }
  return points.slice(0, MAX_POINTS_PER_REQUEST);
}

/**
 * Writes `points` to `dataset` once the response is out. A failed write is reported to `onError`
 * (counted and logged by the gateway), never thrown into the request.
 * @param {AnalyticsEngineDataset} dataset
 * @param {readonly AnalyticsEngineDataPoint[]} points
 * @param {{ waitUntil?: (promise: Promise<unknown>) => void } | undefined} ctx
 * @param {(error: unknown) => void} onError
 */
export function writeLater(dataset, points, ctx, onError) {
  const write = () => {
    for (const point of points) dataset.writeDataPoint(point);
  };
  const pending = Promise.resolve().then(write).catch(onError);
  ctx?.waitUntil?.(pending);
}
