// Types of breaker.js: the fallback chain's circuit breaker for its primary store.

export interface BreakerOptions {
  /** Primary failures (errors or timeouts) in a row that open the breaker. Default 5. */
  failures?: number;
  /** How long the breaker stays open before one request probes the primary. Default 10000. */
  cooldownMs?: number;
}

/** { failures: 5, cooldownMs: 10000 }. */
export declare const DEFAULT_BREAKER: Readonly<Required<BreakerOptions>>;

/** Validates `breaker` (false: off); returns the settings, or null when off. Throws SluiceConfigError naming the field. */
export declare function checkBreakerOptions(breaker: BreakerOptions | boolean | undefined): Readonly<Required<BreakerOptions>> | null;

/** One store's consecutive failures, at the caller's clock. */
export declare class CircuitBreaker {
  constructor(settings: Readonly<Required<BreakerOptions>>);
  /** "closed": ask the store; "probe": ask it, the one request after a cooldown; "open": use the fallbacks. */
  admit(nowMs: number): "closed" | "probe" | "open";
  succeeded(): void;
  /** Returns true when this failure opened the breaker. */
  failed(nowMs: number, probe: boolean): boolean;
  readonly reason: string;
}
