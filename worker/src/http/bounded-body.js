// Reading a request body with a bound on its size: a key that lives in the body (a login's account
// name) must not let a client make the Worker buffer whatever it sends.

/** The most body bytes a key reads by default: far above any login form, far below a Worker's memory. */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024;

/**
 * readBoundedBody reads all of `request`'s body (consuming it) if it has at most `maxBytes` bytes and
 * returns them; it returns null, having read no more than maxBytes + 1 bytes and cancelled the rest,
 * when the body is longer (or its Content-Length says so). A request without a body gives 0 bytes.
 * @param {Request} request
 * @param {number} maxBytes
 * @returns {Promise<Uint8Array | null>}
 */
export async function readBoundedBody(request, maxBytes) {
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    await request.body?.cancel().catch(() => {});
    return null;
  }
  if (request.body === null) return new Uint8Array(0);
  return readBoundedStream(request.body, maxBytes);
}

/**
 * readBoundedStream reads `stream` to its end and returns its bytes, or null, having read no more than
 * maxBytes + 1 bytes and cancelled the rest, when it holds more than `maxBytes`. Both the lockout's
 * account read and the gateway's request buffering (gateway/request-body.js) read through it.
 * @param {ReadableStream<Uint8Array>} stream
 * @param {number} maxBytes
 * @returns {Promise<Uint8Array | null>}
 */
export async function readBoundedStream(stream, maxBytes) {
  const reader = stream.getReader();
  const chunks = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}
