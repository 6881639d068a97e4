// The upstream's body, bounded like its head: when the client is waiting for more and the upstream
// sends nothing for the route's `bodyTimeoutMs`, the body is cut off (the client's response ends in an
// error rather than hanging forever) and the stall is reported. Only the upstream's silence counts:
// while the client reads slowly, nothing is pulled and no timer runs out.
//
// One timer per body, not one per chunk: a read records when it started, and the timer, when it
// fires, either finds the read answered (and waits for the next one to arm it again), or still
// pending but younger than the bound (and sleeps for the rest), or silent for the whole bound (the
// stall). A chunk then costs a clock reading, where a timer and a promise race per chunk cost more
// than the chunk's own stream step (bench/gateway-cpu.js).

/** UpstreamBodyStalled is the error a cut-off body ends with. */
export class UpstreamBodyStalled extends Error {
  /** @param {number} timeoutMs */
  constructor(timeoutMs) {
    super(`the upstream sent nothing for ${timeoutMs} ms in the middle of its body`);
    this.name = "UpstreamBodyStalled";
  }
}

/**
 * SilenceWatchdog calls `onSilence()` once when a read announced by `reading()` has not been followed
 * by `answered()` within `timeoutMs`. `stop()` ends it for good.
 */
export class SilenceWatchdog {
  #timeoutMs;
  #onSilence;
  #since = -1; // when the pending read started; -1: no read pending
  /** @type {ReturnType<typeof setTimeout> | null} */
  #timer = null;
  #done = false;

  /** @param {number} timeoutMs @param {() => void} onSilence */
  constructor(timeoutMs, onSilence) {
    this.#timeoutMs = timeoutMs;
    this.#onSilence = onSilence;
  }

  reading() {
    if (this.#done) return;
    this.#since = Date.now();
    if (this.#timer === null) this.#arm(this.#timeoutMs);
  }

  answered() {
    this.#since = -1;
  }

  stop() {
    this.#done = true;
    this.#since = -1;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** @param {number} ms */
  #arm(ms) {
    this.#timer = setTimeout(() => this.#check(), ms);
  }

  #check() {
    this.#timer = null;
    if (this.#done || this.#since < 0) return;
    const left = this.#since + this.#timeoutMs - Date.now();
    if (left > 0) {
      this.#arm(left);
      return;
    }
    this.stop();
    this.#onSilence();
  }
}

/**
 * watchBody returns a stream of `body`'s chunks that errors with UpstreamBodyStalled, cancels `body`
 * and calls `onStall()` once, when a read of `body` has not answered within `timeoutMs`.
 * @param {ReadableStream} body
 * @param {number} timeoutMs
 * @param {() => void} onStall
 * @returns {ReadableStream}
 */
export function watchBody(body, timeoutMs, onStall) {
  return relayChunks(body, { timeoutMs, onStall, masker: null });
}

/**
 * clientSide is the writing end of the stream the client reads, which tells `onGone()` once when the
 * client stops reading before the relay has ended it (a hang-up): when a write is refused, or the
 * writing end errors (`closed` rejects) on a runtime that errors it when the reading end is cancelled.
 * workerd learns that a client's connection closed only when it writes to it, so there a hang-up is
 * seen with the next bytes written (docs/gateway.md). Ending the stream ourselves (close, abort) is
 * never a hang-up.
 * @param {WritableStream} writable @param {() => void} onGone
 */
function clientSide(writable, onGone) {
  const writer = writable.getWriter();
  let open = true;
  const gone = () => {
    if (!open) return;
    open = false;
    onGone();
  };
  writer.closed.catch(gone);
  return {
    /** @param {Uint8Array} bytes */
    async write(bytes) {
      try {
        await writer.write(bytes);
      } catch (error) {
        gone();
        throw error;
      }
    },
    close() {
      open = false;
      return writer.close();
    },
    /** @param {unknown} reason */
    abort(reason) {
      open = false;
      return writer.abort(reason);
    },
  };
}

/** ClientGone is the reason a relay cancels the upstream's body with when the client hung up. */
export class ClientGone extends Error {
  constructor() {
    super("the client stopped reading the response");
    this.name = "ClientGone";
  }
}

/**
 * A streaming masking pass (redact.js's secretMasker(...).stream()): push/end for a caller that hands it
 * chunks, or `hold` (how many of the last bytes seen may begin an occurrence the next bytes complete)
 * and `mask` (in place, over the held bytes and the new ones in one array) for one that keeps them.
 * @typedef {{ push(chunk: Uint8Array): Uint8Array | null, end(): Uint8Array | null, hold: number, mask: (bytes: Uint8Array) => boolean }} StreamMasker
 */

/**
 * How many bytes one read of the upstream's body may bring (besides the bytes held back for masking).
 * A read returns what has arrived, up to this, without waiting for more: an upstream that writes
 * several chunks before the gateway reads (or one large one) costs one stream step, not one per chunk.
 */
export const READ_BYTES = 64 * 1024;

/**
 * watchedReader reads `body` under a SilenceWatchdog of `timeoutMs` (none when null): when the body
 * stays silent that long, `onStall()` is called and the body cancelled, so a pending read answers
 * { done: true }; stalled() is then the UpstreamBodyStalled error (null until then). relayChunks and
 * response-body.js's whole-body read share it.
 * @param {ReadableStream} body @param {number | null} timeoutMs @param {() => void} onStall
 */
export function watchedReader(body, timeoutMs, onStall) {
  return watched(body.getReader(), timeoutMs, onStall);
}

/**
 * watchedByobReader is watchedReader with a BYOB reader, or null when `body` is not a byte stream
 * (workerd's bodies of fetch() are).
 * @param {ReadableStream} body @param {number | null} timeoutMs @param {() => void} onStall
 */
export function watchedByobReader(body, timeoutMs, onStall) {
  const reader = byobReader(body);
  return reader === null ? null : watched(reader, timeoutMs, onStall);
}

/**
 * watched puts `reader` (of a body, default or BYOB) under watchedReader's SilenceWatchdog.
 * @template {ReadableStreamDefaultReader | ReadableStreamBYOBReader} R
 * @param {R} reader @param {number | null} timeoutMs @param {() => void} onStall
 */
function watched(reader, timeoutMs, onStall) {
  /** @type {UpstreamBodyStalled | null} */
  let error = null;
  const watchdog = timeoutMs === null
    ? null
    : new SilenceWatchdog(timeoutMs, () => {
      error = new UpstreamBodyStalled(timeoutMs);
      onStall();
      reader.cancel(error).catch(() => {});
    });
  return { reader, watchdog, stalled: () => error };
}

/**
 * relayChunks is the one stream step between the upstream's body and the client's: each chunk read
 * from `body` is passed through `masker` (a streaming pass of redact.js, or null) and written on, and
 * the reads are watched for silence when `timeoutMs` is a number (see watchBody). With neither, it
 * returns `body` itself: the runtime then pipes it natively, and no JavaScript runs per chunk.
 * When the client hangs up before the body's end, `onClientGone()` is called once, the watchdog
 * stopped and the upstream's body cancelled: a hang-up is never a stall (natively piped, the runtime
 * cancels the body and nothing is called). `waitUntil` (the request's ctx.waitUntil) is given the
 * relay's loop: workerd drops a request's pending work when its client disconnects, so without it
 * the loop would never learn of the hang-up, and a timer left running would report a stall.
 *
 * In workerd the chunks are written by a loop into a native stream, so the runtime reads the client's
 * side without calling into JavaScript: a FixedLengthStream of `length` when the body announced one
 * (the runtime then sends that Content-Length, and a body that ends short is an error the client
 * sees), else an IdentityTransformStream; a byte stream (a body of fetch()) is read by
 * relayCoalesced, whatever has arrived per read. Elsewhere a ReadableStream's pull does the same steps
 * (and `length` is not enforced).
 * @param {ReadableStream} body
 * `onEnd()` is called once when the relay ends, whichever way (the body's whole-time deadline stops then).
 * @param {{ timeoutMs?: number | null, onStall?: () => void, masker?: StreamMasker | null, length?: number | null, onClientGone?: () => void, waitUntil?: ((promise: Promise<void>) => void) | null, onEnd?: () => void }} options
 * @returns {ReadableStream}
 */
export function relayChunks(body, { timeoutMs = null, onStall = () => {}, masker = null, length = null, onClientGone = () => {}, waitUntil = null, onEnd = () => {} }) {
  if (masker === null && timeoutMs === null) return body;
  if (typeof IdentityTransformStream === "function") {
    const byob = byobReader(body);
    if (byob !== null) return relayCoalesced(byob, { timeoutMs, onStall, masker, length, onClientGone, waitUntil, onEnd });
  }
  const { reader, watchdog, stalled } = watchedReader(body, timeoutMs, onStall);
  /**
   * The next bytes for the client, or null at the end (throws when the body failed or stalled).
   * @returns {Promise<Uint8Array | null>}
   */
  async function next() {
    for (;;) {
      watchdog?.reading();
      const { done, value } = await reader.read();
      watchdog?.answered();
      if (stalled() !== null) throw stalled();
      if (done) {
        watchdog?.stop();
        return masker?.end() ?? null;
      }
      const out = masker === null ? value : masker.push(value);
      // A masker may hold a short chunk back whole (it might begin a secret): read on.
      if (out !== null) return out;
    }
  }
  if (typeof IdentityTransformStream === "function") {
    // eslint-disable-next-line no-undef -- workerd's globals
    const { readable, writable } = length === null ? new IdentityTransformStream() : new FixedLengthStream(length);
    const writer = clientSide(writable, () => clientGone(watchdog, reader, onClientGone));
    const relaying = (async () => {
      try {
        for (let out = await next(); out !== null; out = await next()) await writer.write(out);
        await writer.close();
      } catch (error) {
        abandonRelay(error, watchdog, reader, writer);
      } finally {
        onEnd();
      }
    })();
    waitUntil?.(relaying);
    return readable;
  }
  return new ReadableStream({
    async pull(controller) {
      try {
        const out = await next();
        if (out === null) {
          controller.close();
          onEnd();
        } else controller.enqueue(out);
      } catch (error) {
        watchdog?.stop();
        controller.error(error);
        onEnd();
      }
    },
    cancel(reason) {
      watchdog?.stop();
      onEnd();
      onClientGone();
      return reader.cancel(reason);
    },
  });
}

// A BYOB reader of `body` when it is a byte stream (workerd's bodies of fetch() are), else null.
/** @param {ReadableStream} body @returns {ReadableStreamBYOBReader | null} */
function byobReader(body) {
  try {
    return body.getReader({ mode: "byob" });
  } catch {
    return null;
  }
}

/**
 * relayCoalesced is relayChunks's step in workerd for a byte stream: one buffer of READ_BYTES plus the
 * masker's `hold` is read into (a BYOB read answers with what has arrived, up to the space left, and
 * does not wait to fill it: a chunk written alone reaches the client before the next is written), the
 * bytes held back from the last read stay in front of the new ones in the same buffer, the whole is
 * masked in place in one pass (one copy, into the wasm scan's memory), and all but the new hold is
 * written on. The buffer is read into again once the write has been taken by the client's side (a
 * native stream's write settles then), so no chunk is copied or allocated per read.
 * @param {ReadableStreamBYOBReader} byob
 * @param {{ timeoutMs: number | null, onStall: () => void, masker: StreamMasker | null, length: number | null, onClientGone: () => void, waitUntil: ((promise: Promise<void>) => void) | null, onEnd: () => void }} options
 * @returns {ReadableStream}
 */
function relayCoalesced(byob, { timeoutMs, onStall, masker, length, onClientGone, waitUntil, onEnd }) {
  const { reader, watchdog, stalled } = watched(byob, timeoutMs, onStall);
  const hold = masker === null ? 0 : masker.hold;
  // eslint-disable-next-line no-undef -- workerd's globals
  const { readable, writable } = length === null ? new IdentityTransformStream() : new FixedLengthStream(length);
  const writer = clientSide(writable, () => clientGone(watchdog, reader, onClientGone));
  const relaying = (async () => {
    let buffer = new ArrayBuffer(READ_BYTES + hold);
    let held = 0;
    try {
      for (;;) {
        watchdog?.reading();
        const { done, value } = await reader.read(new Uint8Array(buffer, held, buffer.byteLength - held));
        watchdog?.answered();
        if (stalled() !== null) throw stalled();
        if (done) {
          watchdog?.stop();
          // The held bytes were masked with everything before them; nothing follows to complete them.
          // A BYOB read that finds the end gives the buffer back as an empty view of it.
          const last = /** @type {Uint8Array | undefined} */ (value);
          if (held > 0 && last !== undefined) await writer.write(new Uint8Array(last.buffer, 0, held));
          break;
        }
        buffer = value.buffer;
        const filled = value.byteOffset + value.byteLength;
        const bytes = new Uint8Array(buffer, 0, filled);
        masker?.mask(bytes);
        const release = Math.max(0, filled - hold);
        if (release > 0) await writer.write(bytes.subarray(0, release));
        if (release > 0 && release < filled) bytes.copyWithin(0, release, filled);
        held = filled - release;
      }
      await writer.close();
    } catch (error) {
      abandonRelay(error, watchdog, reader, writer);
    } finally {
      onEnd();
    }
  })();
  waitUntil?.(relaying);
  return readable;
}

/**
 * clientGone ends a relay whose client hung up: the watchdog stops (nobody waits for the upstream's
 * bytes: its silence is no stall now), the upstream's body is cancelled, and `onClientGone()` told.
 * @param {{ stop(): void } | null | undefined} watchdog
 * @param {{ cancel(reason?: any): Promise<void> }} reader
 * @param {() => void} onClientGone
 */
function clientGone(watchdog, reader, onClientGone) {
  watchdog?.stop();
  reader.cancel(new ClientGone()).catch(() => {});
  onClientGone();
}

/**
 * abandonRelay ends a relay that failed (a stall, an upstream error, a client gone): the watchdog stops,
 * the upstream's body is cancelled and the client's response aborted, so a cut-off body never reads as
 * complete. Neither side's refusal matters any more.
 * @param {unknown} error
 * @param {{ stop(): void } | null | undefined} watchdog
 * @param {{ cancel(reason?: any): Promise<void> }} reader
 * @param {{ abort(reason?: any): Promise<void> }} writer
 */
function abandonRelay(error, watchdog, reader, writer) {
  watchdog?.stop();
  reader.cancel(error).catch(() => {});
  writer.abort(error).catch(() => {});
}
