// Per-rule and per-route counters, kept in the isolate's memory: counting a request is a few array
// increments, with no I/O and no allocation on the request path. The counters are this isolate's since
// it started; the Prometheus endpoint shows the isolate that served the scrape, and Analytics Engine
// (analytics.js) is where the counts of every isolate add up.

import { exposition } from "./prometheus.js";

/** @import { GatewayConfig } from "./config.js" */

/** @typedef {"admitted" | "denied" | "would_have_denied" | "bypassed" | "fallbacks" | "near_limit"} RuleEvent */
/**
 * @typedef {object} MetricFamily
 * @property {string} name
 * @property {string} help
 * @property {"counter" | "gauge"} type
 * @property {{ labels: Record<string, string>; value: number }[]} samples
 * @property {"max" | "mean"} [reduce] A gauge only: how the dashboard's aggregator combines the
 *   isolates' values of a series (dashboard/aggregate.js); counters are summed.
 */

/**
 * The per-rule events, in counter order. A fallback or near-limit is counted besides the decision.
 * @type {readonly RuleEvent[]}
 */
export const RULE_EVENTS = Object.freeze([
  "admitted",
  "denied",
  "would_have_denied",
  "bypassed",
  "fallbacks",
  "near_limit",
]);
/** @type {Readonly<Record<string, number>>} */
const EVENT_INDEX = Object.freeze(Object.fromEntries(RULE_EVENTS.map((name, i) => [name, i])));

/** @type {Readonly<Record<string, string>>} */
const RULE_HELP = Object.freeze({
  admitted: "Requests the rule admitted.",
  denied: "Requests the rule denied (enforced: answered 429).",
  would_have_denied: "Requests the rule would have denied, let through because it runs in shadow (or outside its rollout).",
  bypassed: "Requests that skipped the rule: it is in bypass mode, or the Worker's dev bypass (ENV=dev) is on.",
  fallbacks: "Decisions made by a fallback store, or by failMode, because the rule's store failed.",
  near_limit: "Admitted requests that left their key with 80 % or more of the limit used.",
});

// timeout: no response head in time (504); unreachable (502); body_timeout: the body stalled after the
// head (the client's response was cut off); bad_response: a status outside 200-599 (502).
export const UPSTREAM_FAILURES = /** @type {const} */ (["timeout", "unreachable", "body_timeout", "bad_response"]);
Object.freeze(UPSTREAM_FAILURES);
// Requests answered by the gateway itself instead of forwarding them, by their error code (errors.js).
export const REFUSALS = /** @type {const} */ ([
  "sluice_no_route",
  "sluice_method_not_allowed",
  "sluice_bad_path",
  "sluice_misconfigured",
  "sluice_body_too_large",
  "sluice_malformed_credentials",
  "sluice_denied",
]);
Object.freeze(REFUSALS);

// What happened to a WebSocket upgrade (opened: relayed; refused: the connection limit's 429; failed:
// the upstream would not upgrade) and to each client message (websocket.js's MessageOutcome).
export const WEBSOCKET_CONNECTIONS = /** @type {const} */ (["opened", "refused", "failed"]);
export const WEBSOCKET_MESSAGES = /** @type {const} */ (["admitted", "rate_limited", "too_large"]);

export class GatewayMetrics {
  /**
   * Counters for every rule of every route of a validated configuration.
   * @param {GatewayConfig} config
   */
  constructor(config) {
    this.routes = config.routes.map((route) => ({
      prefix: route.prefix,
      rules: route.rules.map((rule) => ({
        name: rule.name,
        mode: rule.mode,
        counts: new Float64Array(RULE_EVENTS.length),
      })),
      upstreamFailures: new Float64Array(UPSTREAM_FAILURES.length),
      limiterErrors: 0,
      clientAborts: 0,
      webSocketConnections: new Float64Array(WEBSOCKET_CONNECTIONS.length),
      webSocketMessages: new Float64Array(WEBSOCKET_MESSAGES.length),
      hasWebSocket: route.websocket !== null,
      listAllowed: 0,
    }));
    this.refusals = new Float64Array(REFUSALS.length);
    this.analyticsErrors = 0;
  }

  /** Counts one event ("admitted", ...) for rule `ruleIndex` of route `routeIndex`. */
  /** @param {number} routeIndex @param {number} ruleIndex @param {RuleEvent} event */
  countRule(routeIndex, ruleIndex, event) {
    this.routes[routeIndex].rules[ruleIndex].counts[EVENT_INDEX[event]] += 1;
  }

  /**
   * Counts a verdict of decide.js: its event (an "unchecked" rule has none), and a near-limit or a
   * fallback (the rule's store failed and another decided, or failMode did) besides.
   */
  /**
   * @param {number} routeIndex @param {number} ruleIndex
   * @param {{ event: RuleEvent | "unchecked"; nearLimit: boolean; fallback: boolean }} verdict
   */
  countVerdict(routeIndex, ruleIndex, verdict) {
    if (verdict.event !== "unchecked") this.countRule(routeIndex, ruleIndex, verdict.event);
    if (verdict.nearLimit) this.countRule(routeIndex, ruleIndex, "near_limit");
    if (verdict.fallback) this.countRule(routeIndex, ruleIndex, "fallbacks");
  }

  /** @param {number} routeIndex @param {string} failure One of UPSTREAM_FAILURES. */
  countUpstreamFailure(routeIndex, failure) {
    this.routes[routeIndex].upstreamFailures[UPSTREAM_FAILURES.indexOf(/** @type {any} */ (failure))] += 1;
  }

  /** Counts a request of the allow list, which skipped the route's rules. @param {number} routeIndex */
  countListAllowed(routeIndex) {
    this.routes[routeIndex].listAllowed += 1;
  }

  /** @param {number} routeIndex */
  countLimiterError(routeIndex) {
    this.routes[routeIndex].limiterErrors += 1;
  }

  /** @param {number} routeIndex @param {(typeof WEBSOCKET_CONNECTIONS)[number]} outcome */
  countWebSocketConnection(routeIndex, outcome) {
    this.routes[routeIndex].webSocketConnections[WEBSOCKET_CONNECTIONS.indexOf(outcome)] += 1;
  }

  /** @param {number} routeIndex @param {(typeof WEBSOCKET_MESSAGES)[number]} outcome */
  countWebSocketMessage(routeIndex, outcome) {
    this.routes[routeIndex].webSocketMessages[WEBSOCKET_MESSAGES.indexOf(outcome)] += 1;
  }

  /** Counts a client that hung up before its request body ended (not a limiter or gateway failure). */
  /** @param {number} routeIndex */
  countClientAbort(routeIndex) {
    this.routes[routeIndex].clientAborts += 1;
  }

  /** Counts a request refused with one of REFUSALS' codes. */
  /** @param {(typeof REFUSALS)[number]} code */
  countRefusal(code) {
    this.refusals[REFUSALS.indexOf(code)] += 1;
  }

  countAnalyticsError() {
    this.analyticsErrors += 1;
  }

  /** The count of one rule event, for tests and the admin endpoint. */
  /** @param {number} routeIndex @param {number} ruleIndex @param {RuleEvent} event @returns {number} */
  ruleCount(routeIndex, ruleIndex, event) {
    return this.routes[routeIndex].rules[ruleIndex].counts[EVENT_INDEX[event]];
  }

  /** The counters as metric families for prometheus.js. */
  /** @returns {MetricFamily[]} */
  families() {
    /** @type {MetricFamily[]} */
    const families = RULE_EVENTS.map((event) => ({
      name: `sluice_rule_${event}_total`,
      help: RULE_HELP[event],
      type: /** @type {const} */ ("counter"),
      samples: this.routes.flatMap((route) =>
        route.rules.map((rule) => ({
          labels: { route: route.prefix, rule: rule.name, mode: rule.mode },
          value: rule.counts[EVENT_INDEX[event]],
        })),
      ),
    }));
    families.push({
      name: "sluice_upstream_failures_total",
      help: "Upstream calls that timed out (504), could not connect (502), answered a status that cannot be relayed (502), or stalled in the middle of their body (cut off).",
      type: "counter",
      samples: this.routes.flatMap((route) =>
        UPSTREAM_FAILURES.map((reason, i) => ({
          labels: { route: route.prefix, reason },
          value: route.upstreamFailures[i],
        })),
      ),
    });
    families.push({
      name: "sluice_limiter_errors_total",
      help: "Requests whose rate limiter failed outright (no store, not even a fallback, answered).",
      type: "counter",
      samples: this.routes.map((route) => ({ labels: { route: route.prefix }, value: route.limiterErrors })),
    });
    const webSocketRoutes = this.routes.filter((route) => route.hasWebSocket);
    families.push({
      name: "sluice_websocket_connections_total",
      help: "WebSocket upgrades on routes with a websocket block: opened, refused by the connection limit (429), or failed (the upstream would not upgrade).",
      type: "counter",
      samples: webSocketRoutes.flatMap((route) => WEBSOCKET_CONNECTIONS.map((outcome, i) => ({ labels: { route: route.prefix, outcome }, value: route.webSocketConnections[i] }))),
    });
    families.push({
      name: "sluice_websocket_messages_total",
      help: "Client WebSocket messages: relayed (admitted), dropped by a message limit (rate_limited), or over maxMessageBytes (too_large: the socket was closed with 1009).",
      type: "counter",
      samples: webSocketRoutes.flatMap((route) => WEBSOCKET_MESSAGES.map((outcome, i) => ({ labels: { route: route.prefix, outcome }, value: route.webSocketMessages[i] }))),
    });
    families.push({
      name: "sluice_client_aborts_total",
      help: "Requests whose client hung up before its body ended (answered 499, forwarded nowhere).",
      type: "counter",
      samples: this.routes.map((route) => ({ labels: { route: route.prefix }, value: route.clientAborts })),
    });
    families.push({
      name: "sluice_list_allowed_total",
      help: "Requests on the allow list (lists.allow), which skipped the route's rules.",
      type: "counter",
      samples: this.routes.map((route) => ({ labels: { route: route.prefix }, value: route.listAllowed })),
    });
    families.push({
      name: "sluice_refused_total",
      help: "Requests the gateway answered itself instead of forwarding them (no route, wrong method, refused path, missing secret, body too large, on the deny list).",
      type: "counter",
      samples: REFUSALS.map((code, i) => ({ labels: { code }, value: this.refusals[i] })),
    });
    families.push({
      name: "sluice_analytics_errors_total",
      help: "Requests whose data points Analytics Engine refused.",
      type: "counter",
      samples: [{ labels: {}, value: this.analyticsErrors }],
    });
    return families;
  }

  /** The Prometheus text exposition (format 0.0.4) of every counter, and of `more` families after them. */
  /** @param {MetricFamily[]} [more] @returns {string} */
  toPrometheus(more = []) {
    return exposition([...this.families(), ...more]);
  }
}
