// Which way an upstream's response body reaches the client, cheapest first (docs/gateway.md, "What it
// costs", has the figures of each):
//   - native: nothing to mask and no silence to bound (maskBody "never", or a media type that cannot
//     carry a secret as text, with bodyTimeoutMs null): the runtime pipes the body, no JavaScript runs
//     per chunk; with a bodyDeadlineMs, through a native stream whose pipe the deadline's abort cuts;
//   - whole: a body that must be masked and announces a length up to WHOLE_BODY_BYTES is read whole
//     and masked in one pass, no stream step per chunk. Fetched over the network, it is read with
//     arrayBuffer() (one runtime step; the runtime stops at its Content-Length), and bodyTimeoutMs
//     bounds the whole read from the head on: the head's timer (upstream-deadline.js) moves to the
//     body's deadline, and its abort errors the body. From a service binding (whose body's length
//     the runtime does not hold to its Content-Length), it is read by BYOB reads, a read per socket
//     read, each watched for silence as a stream is;
//   - streamed: one stream step per read of what has arrived (body-watchdog.js's relayChunks: in
//     workerd a BYOB read into a 64 KiB buffer), masking and watching the silences together.
// A body of known length keeps it on the way out, so a body cut short is an error the client sees.

import { UpstreamBodyStalled, relayChunks, watchedByobReader, watchedReader } from "./body-watchdog.js";

/** @import { UpstreamDeadline } from "./upstream-deadline.js" */

/** Bodies up to this length (declared by the upstream) are read whole and masked in one pass. */
export const WHOLE_BODY_BYTES = 64 * 1024;

// Media types whose bytes are not text an echo could put a secret in: images (SVG is XML text),
// audio, video and fonts. Everything else, application/octet-stream included (an echo endpoint may use
// it), is masked unless the route says maskBody "never".
/** @param {string | null} contentType @returns {boolean} */
function isMediaType(contentType) {
  if (contentType === null) return false;
  const type = contentType.split(";", 1)[0].trim().toLowerCase();
  if (type === "image/svg+xml") return false;
  return /^(image|audio|video|font)\/[a-z0-9.+-]+$/.test(type);
}

/** needsMasking says whether a body of `headers` on a route of `maskBody` is read for secrets. @param {"auto" | "always" | "never"} maskBody @param {Headers} headers @param {ReturnType<typeof import("./redact.js").secretMasker>} mask @returns {boolean} */
export function needsMasking(maskBody, headers, mask) {
  if (!mask.any || maskBody === "never") return false;
  return maskBody === "always" || !isMediaType(headers.get("content-type"));
}

/** @param {Headers} headers @returns {number | null} */
function declaredLength(headers) {
  const value = headers.get("content-length");
  const encoding = headers.get("content-encoding");
  if (value === null || !/^\d{1,15}$/.test(value)) return null;
  // A compressed body comes decoded (longer than its Content-Length) and is encoded again on the way
  // out, at a length known only then.
  if (encoding !== null && encoding.trim().toLowerCase() !== "identity") return null;
  return Number(value);
}

// `body` at the length it announced when it announced one: a FixedLengthStream (workerd) makes the
// runtime send that Content-Length, and makes a body that ends short an error the client sees.
/** @param {ReadableStream} body @param {number | null} length @returns {ReadableStream} */
function withLength(body, length) {
  if (length === null || typeof FixedLengthStream !== "function") return body;
  // eslint-disable-next-line no-undef -- workerd's global
  const fixed = new FixedLengthStream(length);
  body.pipeTo(fixed.writable).catch(() => {});
  return fixed.readable;
}

/** @param {Uint8Array[]} chunks @param {number} total @returns {Uint8Array} */
function concat(chunks, total) {
  if (chunks.length === 1) return chunks[0];
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

// Reads `body` whole, watching its silences. Resolves to { bytes } or, when it stalled or failed,
// { partial, error }. A byte stream is read with a BYOB reader: each read brings what has arrived (a
// few socket reads in all, where a default reader's reads bring 4 KiB each) into a scratch buffer,
// copied at once into the body's (`length` bytes and one more, to see a body longer than it said).
// The scratch buffer is the one a BYOB read takes from JavaScript: a read that fails or is cut off
// keeps it, never what arrived before.
/** @param {ReadableStream} body @param {number} length @param {number | null} timeoutMs @param {() => void} onStall @returns {Promise<{ bytes: Uint8Array, partial?: undefined, error?: undefined } | { partial: Uint8Array, error: unknown, bytes?: undefined }>} */
async function readWhole(body, length, timeoutMs, onStall) {
  const byob = watchedByobReader(body, timeoutMs, onStall);
  if (byob === null) return readWholeByChunks(body, timeoutMs, onStall);
  const { reader, watchdog, stalled } = byob;
  const bytes = new Uint8Array(length + 1);
  let scratch = new ArrayBuffer(length + 1);
  let filled = 0;
  try {
    while (filled <= length) {
      watchdog?.reading();
      const { done, value } = await reader.read(new Uint8Array(scratch, 0, length + 1 - filled));
      watchdog?.answered();
      if (stalled() !== null) return { partial: bytes.subarray(0, filled), error: stalled() };
      if (done) return { bytes: bytes.subarray(0, filled) };
      bytes.set(value, filled);
      filled += value.byteLength;
      scratch = value.buffer;
    }
    // Longer than it said: what the caller needs to see that is here; the rest is not read.
    reader.cancel().catch(() => {});
    return { bytes };
  } catch (error) {
    return { partial: bytes.subarray(0, filled), error };
  } finally {
    watchdog?.stop();
  }
}

// readWhole for a stream that is not a byte stream: chunk by chunk, concatenated at the end.
/** @param {ReadableStream} body @param {number | null} timeoutMs @param {() => void} onStall @returns {Promise<{ bytes: Uint8Array, partial?: undefined, error?: undefined } | { partial: Uint8Array, error: unknown, bytes?: undefined }>} */
async function readWholeByChunks(body, timeoutMs, onStall) {
  const { reader, watchdog, stalled } = watchedReader(body, timeoutMs, onStall);
  /** @type {Uint8Array[]} */
  const chunks = [];
  let total = 0;
  try {
    for (;;) {
      watchdog?.reading();
      const { done, value } = await reader.read();
      watchdog?.answered();
      if (stalled() !== null) return { partial: concat(chunks, total), error: stalled() };
      if (done) break;
      const bytes = value instanceof Uint8Array ? value : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
      chunks.push(bytes);
      total += bytes.length;
    }
  } catch (error) {
    return { partial: concat(chunks, total), error };
  } finally {
    watchdog?.stop();
  }
  return { bytes: chunks.length === 0 ? new Uint8Array(0) : concat(chunks, total) };
}

/** UpstreamBodyTooSlow is the error a body read whole ends with when it did not arrive within bodyTimeoutMs of its head. */
export class UpstreamBodyTooSlow extends UpstreamBodyStalled {
  /** @param {number} timeoutMs */
  constructor(timeoutMs) {
    super(timeoutMs);
    this.message = `the upstream did not send its whole body within ${timeoutMs} ms of its head`;
    this.name = "UpstreamBodyTooSlow";
  }
}

// Reads the body of `response` whole in one runtime step, by `deadline` (moved to `timeoutMs` from
// now; none when null). Resolves like readWhole; what arrived before a cut or failure is not kept
// (arrayBuffer() gives nothing then): the client gets none of it, and a body that short of its
// Content-Length.
/** @param {Response} response @param {number | null} timeoutMs @param {UpstreamDeadline} deadline @param {() => void} onStall @returns {Promise<{ bytes: Uint8Array, partial?: undefined, error?: undefined } | { partial: Uint8Array, error: unknown, bytes?: undefined }>} */
async function readWholeAtOnce(response, timeoutMs, deadline, onStall) {
  if (timeoutMs === null) deadline.stop();
  else deadline.body(timeoutMs);
  try {
    return { bytes: new Uint8Array(await response.arrayBuffer()) };
  } catch (error) {
    if (deadline.expired === null || timeoutMs === null) return { partial: new Uint8Array(0), error };
    onStall();
    return { partial: new Uint8Array(0), error: new UpstreamBodyTooSlow(timeoutMs) };
  } finally {
    deadline.stop();
  }
}

// A stream of `bytes` that then fails with `error`.
/** @param {Uint8Array | null} bytes @param {unknown} error @returns {ReadableStream} */
function failingAfter(bytes, error) {
  return new ReadableStream({
    start(controller) {
      if (bytes !== null && bytes.length > 0) controller.enqueue(bytes);
    },
    pull(controller) {
      controller.error(error);
    },
  });
}

/**
 * The body to give the client for `upstreamResponse` (which has a body to relay) on a route of
 * `upstream`: masked with `mask` (redact.js's secretMasker) unless needsMasking says it need not be,
 * its silences bounded by upstream.bodyTimeoutMs (`onStall()` is called once when one runs out).
 * `relay.onClientGone()` is called once when the client hangs up in the middle of a relayed stream
 * (never on a native pipe or a body read whole: no JavaScript sees the client's side there);
 * `relay.waitUntil` (the request's ctx.waitUntil) keeps that relay running to see it (body-watchdog.js).
 * Resolves to a ReadableStream or the whole masked bytes.
 * @param {Response & { body: ReadableStream }} upstreamResponse
 * @param {import("./config.js").GatewayUpstream} upstream
 * @param {ReturnType<typeof import("./redact.js").secretMasker>} mask
 * @param {() => void} onStall
 * @param {UpstreamDeadline} deadline the upstream call's timer (proxy.js): stopped here, or moved to bound a body read whole
 * @param {{ onClientGone?: () => void, waitUntil?: ((promise: Promise<void>) => void) | null }} [relay]
 * @returns {Promise<ReadableStream | Uint8Array>}
 */
export async function responseBody(upstreamResponse, upstream, mask, onStall, deadline, relay = {}) {
  const { body, headers } = upstreamResponse;
  const timeoutMs = upstream.bodyTimeoutMs;
  // Set only where bodyTimeoutMs is null (config.js): the body's whole time from its head, bounded by
  // the upstream call's timer, whose expiry aborts the fetch and so errors the body wherever it is.
  const wholeMs = upstream.bodyDeadlineMs;
  const length = declaredLength(headers);
  const masked = needsMasking(upstream.maskBody, headers, mask);
  const whole = masked && length !== null && length <= WHOLE_BODY_BYTES;
  const atOnce = whole && upstream.service === null;
  if (!atOnce) {
    if (wholeMs === null) deadline.stop();
    else deadline.body(wholeMs, onStall);
  }
  // Built only under a deadline: the common response allocates nothing for it.
  const ended = wholeMs === null ? undefined : () => deadline.stop();
  if (!masked) {
    if (timeoutMs !== null) return relayChunks(body, { timeoutMs, onStall, masker: null, length, ...relay });
    return ended === undefined ? withLength(body, length) : pipedUntilEnd(body, length, ended, relay.waitUntil ?? null);
  }
  if (whole) {
    const read = atOnce
      ? await readWholeAtOnce(upstreamResponse, timeoutMs ?? wholeMs, deadline, onStall)
      : await readWhole(body, /** @type {number} */ (length), timeoutMs, onStall);
    deadline.stop(); // read to its end or cut: a whole-time deadline has nothing left to bound
    if (read.bytes !== undefined && read.bytes.length === length) {
      mask.bytes(read.bytes);
      return read.bytes;
    }
    // Cut off, or not the length it announced: what arrived goes out masked (less the tail that may
    // begin a secret the rest would have completed), at the announced length, so it ends in an error.
    const masker = mask.stream();
    const released = masker.push(read.partial ?? read.bytes);
    const error = read.error ?? new TypeError("the upstream's body did not match its Content-Length");
    return withLength(failingAfter(released, error), length);
  }
  return relayChunks(body, { timeoutMs, onStall, masker: mask.stream(), length, onEnd: ended, ...relay });
}

// `body` piped by the runtime into the client's stream (no JavaScript per chunk in workerd: a native
// stream on both sides), at the length it announced; `onEnd()` once the pipe ends, whichever way.
// What bounds it is the fetch's abort: it errors the body, and the pipe then aborts the client's side.
// The pipe is needed: a chunked body handed to the runtime as the response's own body is not cut by
// the abort (gateway-body-deadline.test.js fails that way), and the pipe's end is what stops the timer.
/** @param {ReadableStream} body @param {number | null} length @param {() => void} onEnd @param {((promise: Promise<void>) => void) | null} waitUntil @returns {ReadableStream} */
function pipedUntilEnd(body, length, onEnd, waitUntil) {
  const { readable, writable } = typeof IdentityTransformStream !== "function"
    ? new TransformStream()
    : length === null
      // eslint-disable-next-line no-undef -- workerd's globals
      ? new IdentityTransformStream()
      // eslint-disable-next-line no-undef -- workerd's globals
      : new FixedLengthStream(length);
  const piping = body.pipeTo(writable).then(onEnd, onEnd);
  waitUntil?.(piping);
  return readable;
}
