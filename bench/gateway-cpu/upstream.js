// The upstream of bench/gateway-cpu.js: a Node HTTP server in the bench's own process, so that what it
// costs is on none of workerd's threads and the figure of each Worker is its own (issue 23 measured the
// bare Worker at 900-2,200 MiB/s this way; an upstream Worker in the same workerd thread made every
// figure its own rate plus the upstream's). It answers every path from bytes made once. Paths:
//   /small                   a small JSON answer (~200 bytes, with its Content-Length);
//   /body?bytes=N&chunk=C&kind=text|escapes|binary[&length=1]
//                            N bytes written C bytes at a time, without a Content-Length (chunked: each
//                            write is one HTTP chunk, as a server sending events writes them), or with
//                            one (length=1: the bytes arrive as the socket brings them): `text` is
//                            printable ASCII with no secret in it, `escapes` is made of `%&\+` (every
//                            byte starts an escape the masker must try), `binary` random bytes served as
//                            image/webp (a type that cannot carry a secret as text).
import { createServer } from "node:http";

const SMALL = JSON.stringify({ id: 12345, name: "widget", tags: ["a", "b", "c"], price: 19.99, stock: 7, updated: "2026-12-02T04:00:00Z", note: "x".repeat(64) });

function pattern(kind, bytes) {
  const out = Buffer.alloc(bytes);
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

/** startUpstream listens on 127.0.0.1:`port` and resolves to { close() }. @param {number} port */
export async function startUpstream(port) {
  const server = createServer((request, response) => {
    const url = new URL(request.url, "http://upstream");
    if (url.pathname.endsWith("/small")) {
      response.writeHead(200, { "content-type": "application/json", "cache-control": "no-store", "content-length": String(SMALL.length) });
      response.end(SMALL);
      return;
    }
    const bytes = Number(url.searchParams.get("bytes") ?? 65536);
    const chunk = Number(url.searchParams.get("chunk") ?? 4096);
    const kind = url.searchParams.get("kind") ?? "text";
    const data = bytesOf(kind, bytes);
    const length = url.searchParams.get("length") === "1" ? { "content-length": String(bytes) } : {};
    response.writeHead(200, { "content-type": kind === "binary" ? "image/webp" : "text/plain; charset=utf-8", ...length });
    let at = 0;
    const pump = () => {
      while (at < bytes) {
        const end = Math.min(bytes, at + chunk);
        const more = response.write(data.subarray(at, end));
        at = end;
        if (!more) {
          response.once("drain", pump);
          return;
        }
      }
      response.end();
    };
    pump();
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return { close: () => new Promise((resolve) => server.close(resolve)) };
}
