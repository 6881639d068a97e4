// The error every configuration mistake throws when a limiter or middleware is built. `field` is the
// option's path as the caller wrote it ("limit", "rules[1].windowSec", "key"), so the message and the
// property both point at what to fix.

/** SluiceConfigError is invalid configuration, thrown at construction, never per request. */
export class SluiceConfigError extends TypeError {
  /**
   * @param {string} field
   * @param {string} message
   */
  constructor(field, message) {
    super(`sluice: ${field} ${message}`);
    /** @type {"SluiceConfigError"} */
    this.name = "SluiceConfigError";
    /**
     * The option at fault as the caller wrote it: "limit", "rules[1].windowSec", "ip({ ipv6Prefix })".
     * @readonly
     */
    this.field = field;
    // What is wrong with it, without the field: for callers that report it under a path of their own.
    /**
     * What is wrong with the field, without its name ("must be a whole number from 1 to 2147483648; got 0").
     * @readonly
     */
    this.problem = message;
  }
}

/**
 * describe renders a configuration value for an error message (NaN, strings quoted, functions named).
 * @param {unknown} value
 * @returns {string}
 */
export function describe(value) {

  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === "function") return "a function";
  if (Array.isArray(value)) return "an array";
  if (value === null) return "null";
  if (typeof value === "object") return "an object";
  return String(value);
}
