// The only module that reads the wall clock. Everything else takes time as an argument or through an
// injected `clock` option, so tests pass fixed instants instead of sleeping.

/**
 * nowMs reports the current time in whole milliseconds since the Unix epoch.
 * @returns {number}
 */
export function nowMs() {

  return Date.now();
}
