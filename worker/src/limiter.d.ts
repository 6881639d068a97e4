import type { Outcome, NormalizedRule } from "./stores/store.js";
import type { CommonOptions } from "./options.js";

/** A request that was checked: the store's outcome, with the rules and the keys it was counted under. */
export interface CheckedDecision extends Outcome {
  bypassed: false;
  skipped: false;
  readonly rules: readonly NormalizedRule[];
  /** The key text of each rule's check, before hashing; index-aligned with rules and checks. */
  readonly keys: string[];
}

/**
 * What only a checked decision carries, absent from a decision nothing counted: reading `remaining` of
 * c.get("rateLimit") gives a number, or undefined when the dev bypass let the request through.
 */
export type NothingCounted = { readonly [Field in Exclude<keyof CheckedDecision, "allowed" | "bypassed" | "skipped" | "rules">]?: undefined };

/** A request let through by the dev bypass (the environment variable matched); nothing was counted. */
export interface BypassedDecision extends NothingCounted {
  readonly allowed: true;
  readonly bypassed: true;
  readonly skipped: false;
  readonly rules: readonly NormalizedRule[];
}

/** A request `skip` let through; nothing was counted. */
export interface SkippedDecision extends NothingCounted {
  readonly allowed: true;
  readonly bypassed: false;
  readonly skipped: true;
  readonly rules: readonly NormalizedRule[];
}

export type RateLimitDecision = CheckedDecision | BypassedDecision | SkippedDecision;

/** createLimiter's options: key, cost and skip functions receive (request, env, ctx). */
export type LimiterOptions<Env = any> = CommonOptions<[request: Request, env: Env, ctx: unknown]>;

export interface Limiter<Env = any> {
  readonly rules: readonly NormalizedRule[];
  /** Decides `request` and charges it if every rule admits it. */
  limit(request: Request, env?: Env, ctx?: unknown): Promise<RateLimitDecision>;
  /** The rate-limit header fields a response to `decision` carries, as [name, value] pairs. */
  headers(decision: RateLimitDecision): Array<[string, string]>;
  /** `response` with the rate-limit header fields of `decision` (a copy if its headers were immutable). */
  withHeaders(response: Response, decision: RateLimitDecision): Response;
  /** The 429 for a denied decision: headers, Retry-After, cache-control: no-store, JSON body. */
  limitedResponse(decision: CheckedDecision): Response;
}

/**
 * createLimiter builds a limiter for a plain fetch handler. Throws SluiceConfigError naming the option
 * for invalid configuration.
 */
export declare function createLimiter<Env = any>(config: LimiterOptions<Env>): Limiter<Env>;
