// Log timestamps to the whole milliseconds since the Unix epoch that the core takes. One reading for
// every format: a number (or a string of digits) is read by its size, as Cloudflare's Logpush writes it
// in whichever of its formats the job was set up with; anything else must be RFC 3339.
//
//   > 1e17  nanoseconds   (Logpush "unixnano", the default: 1.7e18 today)
//   > 1e14  microseconds
//   > 1e11  milliseconds  (Logpush "unixms" style, and most CSV exports)
//   else    seconds, fractions allowed (Logpush "unix")
// Nanoseconds above 2^53 lose their last digits to the double JSON.parse makes of them: at most 256 ns,
// never a whole millisecond's worth after the floor.

const DIGITS = /^\d+(\.\d+)?$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * timestampMs reads a log timestamp; NaN when it is none of the accepted forms.
 * @param {unknown} value
 * @returns {number}
 */
export function timestampMs(value) {
  if (typeof value === "number") return numberMs(value);
  if (typeof value !== "string") return NaN;
  if (DIGITS.test(value)) return numberMs(Number(value));
  if (!RFC3339.test(value)) return NaN;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : NaN;
}

/** @param {number} n */
function numberMs(n) {
  if (!Number.isFinite(n) || n < 0) return NaN;
  // Through whole microseconds: 1795996915.306 * 1000 is 1795996915305.9998 as a double, and a
  // plain floor would lose the millisecond the log wrote.
  if (n > 1e17) return Math.floor(Math.round(n / 1e3) / 1e3);
  if (n > 1e14) return Math.floor(Math.round(n) / 1e3);
  if (n > 1e11) return Math.floor(n);
  return Math.floor(Math.round(n * 1e6) / 1e3);
}
