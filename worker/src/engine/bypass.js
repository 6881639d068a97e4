// The dev bypass: limits off while developing, never by accident once deployed. It applies only when
// both hold:
//  - the Worker's environment sets the variable to the value (default ENV=dev): nothing in the request
//    is consulted for this;
//  - the request is addressed to a loopback host (localhost, *.localhost, 127.0.0.0/8, [::1]), as
//    wrangler dev, miniflare and vitest-pool-workers send them. Cloudflare routes a deployed Worker's
//    requests by their host, which is then the zone's: a deployed environment left at ENV=dev keeps
//    its limits.
// A bypassed request still has its store's bindings checked (a missing binding fails as it would when
// deployed), the isolate logs once that limits are off, and the response header says only that the
// request was bypassed, not which variable did it.
import { SluiceConfigError, describe } from "./errors.js";

/** The variable and value that switch limiting off, by default. */
export const DEFAULT_BYPASS = Object.freeze({ variable: "ENV", value: "dev" });

let announced = false;

/**
 * normalizeBypass validates the `bypass` option: undefined (the default, ENV=dev), false (never), or
 * { variable?, value? }; throws a SluiceConfigError naming the field.
 * @param {unknown} bypass
 * @returns {Readonly<{ variable: string; value: string }> | null}
 */
export function normalizeBypass(bypass) {
  if (bypass === undefined) return DEFAULT_BYPASS;
  if (bypass === false) return null;
  if (bypass === null || typeof bypass !== "object" || Array.isArray(bypass)) {
    throw new SluiceConfigError("bypass", `must be false or { variable, value }; got ${describe(bypass)}`);
  }
  for (const field of Object.keys(bypass)) {
    if (field !== "variable" && field !== "value") throw new SluiceConfigError(`bypass.${field}`, "is not an option (known: variable, value)");
  }
  const { variable = DEFAULT_BYPASS.variable, value = DEFAULT_BYPASS.value } = /** @type {{ variable?: unknown; value?: unknown }} */ (bypass);
  if (typeof variable !== "string" || variable === "") throw new SluiceConfigError("bypass.variable", `must be the name of an environment variable; got ${describe(variable)}`);
  if (typeof value !== "string" || value === "") throw new SluiceConfigError("bypass.value", `must be a non-empty string; got ${describe(value)}`);
  return Object.freeze({ variable, value });
}

/**
 * isLoopbackHost: whether `hostname` (as URL spells it) names this machine.
 * @param {string} hostname
 * @returns {boolean}
 */
export function isLoopbackHost(hostname) {
  if (hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]") return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * bypassApplies: whether `bypass` lets a request to the URL `urlOf()` answers through, given the
 * Worker's `env`. The URL is asked for only once `env` switches the bypass on: building it costs a
 * string per request (the replay's requests make theirs from the log's fields).
 * @param {Readonly<{ variable: string; value: string }> | null} bypass
 * @param {unknown} env
 * @param {() => string | undefined} urlOf
 * @returns {boolean}
 */
export function bypassApplies(bypass, env, urlOf) {
  if (bypass === null || env === null || typeof env !== "object") return false;
  if (/** @type {Record<string, unknown>} */ (env)[bypass.variable] !== bypass.value) return false;
  const url = urlOf();
  if (typeof url !== "string") return false;
  let hostname;
  try {
    hostname = new URL(url).hostname;
  } catch {
    return false;
  }
  return isLoopbackHost(hostname);
}

/**
 * announceBypass logs, once per isolate, that the dev bypass switched limiting off.
 * @param {Readonly<{ variable: string; value: string }>} bypass
 */
export function announceBypass(bypass) {
  if (announced) return;
  announced = true;
  console.warn(
    `sluice: rate limits are OFF in this isolate: ${bypass.variable}=${bypass.value} and the request is to a loopback host (the dev bypass; bypass: false turns it off)`,
  );
}
