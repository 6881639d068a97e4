// Masks the upstream credential wherever an upstream echoes it back (a debug endpoint that reflects
// request headers, an error page quoting the Authorization header). Without this, any client could
// read the gateway's secret through such an endpoint. Each occurrence becomes as many `*` bytes as it
// has, so lengths — and a Content-Length header — stay valid.
//
// Caught: the secret as it is, percent-encoded (a reflected query or form), and JSON-escaped, with
// `/` as is or as `\/` (encoders differ), for secrets whose characters those encodings change (a
// base64 token's `/`, `+`, `=`). Not caught: an upstream that re-encodes it otherwise (base64, or
// `\u00XX` escapes) still leaks it.

const STAR = 0x2a;
const encoder = new TextEncoder();

// The spellings of `secret` an echo may carry, each once.
function spellings(secret) {
  const percent = encodeURIComponent(secret);
  const json = JSON.stringify(secret).slice(1, -1);
  const jsonSlash = json.replaceAll("/", "\\/"); // PHP's json_encode, among others
  return [...new Set([secret, percent, json, jsonSlash])];
}

function maskAll(bytes, needle) {
  const first = needle[0];
  let at = bytes.indexOf(first);
  while (at !== -1 && at + needle.length <= bytes.length) {
    let matches = true;
    for (let j = 1; j < needle.length; j++) {
      if (bytes[at + j] !== needle[j]) {
        matches = false;
        break;
      }
    }
    if (matches) {
      bytes.fill(STAR, at, at + needle.length);
      at = bytes.indexOf(first, at + needle.length);
    } else {
      at = bytes.indexOf(first, at + 1);
    }
  }
}

function maskingStream(needles) {
  // The last (longest needle - 1) bytes of what has been seen may be the start of an occurrence that
  // the next chunk completes, so they are held back until it arrives.
  const longest = Math.max(...needles.map((needle) => needle.length));
  let held = new Uint8Array(0);
  return new TransformStream({
    transform(chunk, controller) {
      const bytes = new Uint8Array(held.length + chunk.byteLength);
      bytes.set(held, 0);
      bytes.set(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength), held.length);
      for (const needle of needles) maskAll(bytes, needle);
      const release = Math.max(0, bytes.length - (longest - 1));
      if (release > 0) controller.enqueue(bytes.subarray(0, release));
      held = bytes.slice(release);
    },
    flush(controller) {
      if (held.length > 0) controller.enqueue(held);
    },
  });
}

/**
 * A masker for one secret: `text(value)` masks a string (a header value), `body(stream)` a byte stream.
 * With no secret (null), both return their input unchanged.
 */
export function secretMasker(secret) {
  if (secret === null) return { text: (value) => value, body: (stream) => stream };
  const forms = spellings(secret);
  const needles = forms.map((form) => encoder.encode(form));
  return {
    text: (value) => {
      let masked = value;
      for (const form of forms) if (masked.includes(form)) masked = masked.replaceAll(form, "*".repeat(form.length));
      return masked;
    },
    body: (stream) => (stream === null ? null : stream.pipeThrough(maskingStream(needles))),
  };
}
