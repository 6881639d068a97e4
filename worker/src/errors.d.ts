/** Invalid configuration, thrown when a limiter or middleware is built, never per request. */
export declare class SluiceConfigError extends TypeError {
  readonly name: "SluiceConfigError";
  /** The option at fault as the caller wrote it: "limit", "rules[1].windowSec", "ip({ ipv6Prefix })". */
  readonly field: string;
}
