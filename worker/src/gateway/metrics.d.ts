// Types of metrics.js: the gateway's in-isolate counters.

import type { GatewayConfig } from "./config.js";

export type RuleEvent = "admitted" | "denied" | "would_have_denied" | "bypassed" | "fallbacks" | "near_limit";
export declare const RULE_EVENTS: readonly RuleEvent[];
export declare const UPSTREAM_FAILURES: readonly ["timeout", "unreachable"];
export declare const REFUSALS: readonly ["sluice_no_route", "sluice_method_not_allowed", "sluice_bad_path", "sluice_misconfigured"];

export interface MetricFamily {
  name: string;
  help: string;
  type: "counter";
  samples: { labels: Record<string, string>; value: number }[];
}

export declare class GatewayMetrics {
  constructor(config: GatewayConfig);
  countRule(routeIndex: number, ruleIndex: number, event: RuleEvent): void;
  /** Counts a verdict's event ("unchecked": none), and a near-limit or a fallback besides. */
  countVerdict(routeIndex: number, ruleIndex: number, verdict: { event: RuleEvent | "unchecked"; nearLimit: boolean; fallback: boolean }): void;
  countUpstreamFailure(routeIndex: number, failure: "timeout" | "unreachable"): void;
  countLimiterError(routeIndex: number): void;
  countRefusal(code: (typeof REFUSALS)[number]): void;
  countAnalyticsError(): void;
  ruleCount(routeIndex: number, ruleIndex: number, event: RuleEvent): number;
  families(): MetricFamily[];
  /** The Prometheus text exposition (format 0.0.4). */
  toPrometheus(): string;
}
