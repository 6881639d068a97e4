// The --json summary: replay()'s result as it is (keys already redacted by the caller), plus the
// tool's version of the format so CI scripts can check what they parse.

/** Bumped when a field of the JSON summary changes meaning or goes away. */
export const JSON_FORMAT_VERSION = 1;

/**
 * jsonReport is the JSON text of `result`.
 * @param {any} result
 * @returns {string}
 */
export function jsonReport(result) {
  return `${JSON.stringify({ format: "sluice-replay", version: JSON_FORMAT_VERSION, ...result }, null, 2)}\n`;
}
