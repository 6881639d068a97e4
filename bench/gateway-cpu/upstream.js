// The upstream of bench/gateway-cpu.js: answers every path from bytes made once, so that what it costs
// is the same whichever Worker (the gateway or the bare one) asked. Paths:
//   /small                   a small JSON answer (~200 bytes, with its Content-Length);
//   /body?bytes=N&chunk=C&kind=text|escapes|binary
//                            N bytes in chunks of C bytes, without a Content-Length (streamed):
//                            `text` is printable ASCII with no secret in it, `escapes` is made of
//                            `%&\+` (every byte starts an escape the masker must try), `binary` random
//                            bytes served as image/webp (a type that cannot carry a secret as text).
const SMALL = JSON.stringify({ id: 12345, name: "widget", tags: ["a", "b", "c"], price: 19.99, stock: 7, updated: "2026-12-02T04:00:00Z", note: "x".repeat(64) });

function pattern(kind, bytes) {
  const out = new Uint8Array(bytes);
  let seed = 0x9e3779b9;
  const next = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) >>> 24);
  const escapes = [0x25, 0x26, 0x5c, 0x2b];
  for (let i = 0; i < bytes; i++) {
    if (kind === "binary") out[i] = next();
    else if (kind === "escapes") out[i] = escapes[next() & 3];
    else out[i] = 0x20 + (next() % 95);
  }
  return out;
}

const cache = new Map();
function bytesOf(kind, bytes) {
  const id = `${kind}:${bytes}`;
  if (!cache.has(id)) cache.set(id, pattern(kind, bytes));
  return cache.get(id);
}

export default {
  fetch(request) {
    const url = new URL(request.url);
    if (url.pathname.endsWith("/small")) {
      // With its length, as an HTTP API sends a small JSON answer (through a service binding a string
      // body alone arrives without one).
      return new Response(SMALL, { headers: { "content-type": "application/json", "cache-control": "no-store", "content-length": String(SMALL.length) } });
    }
    const bytes = Number(url.searchParams.get("bytes") ?? 65536);
    const chunk = Number(url.searchParams.get("chunk") ?? 4096);
    const kind = url.searchParams.get("kind") ?? "text";
    const data = bytesOf(kind, bytes);
    let at = 0;
    const body = new ReadableStream({
      type: "bytes",
      pull(controller) {
        if (at >= bytes) {
          controller.close();
          return;
        }
        const end = Math.min(bytes, at + chunk);
        controller.enqueue(data.slice(at, end));
        at = end;
      },
    });
    const type = kind === "binary" ? "image/webp" : "text/plain; charset=utf-8";
    return new Response(body, { headers: { "content-type": type } });
  },
};
