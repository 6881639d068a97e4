/** Invalid configuration, thrown when a limiter or middleware is built, never per request. */
export declare class SluiceConfigError extends TypeError {
  readonly name: "SluiceConfigError";
  /** The option at fault as the caller wrote it: "limit", "rules[1].windowSec", "ip({ ipv6Prefix })". */
  readonly field: string;
  /** What is wrong with the field, without its name ("must be a whole number from 1 to 2147483648; got 0"). */
  readonly problem: string;
}
