// The lines of the logs to replay: files in the order given, or standard input ("-" or no file), each
// plain or gzip (found by its magic bytes, not its name; concatenated gzip members, as Logpush writes
// them, are read through). Lines come in batches, one per chunk read, so the caller pays no promise per
// line. A line's number is its number in its own file, from 1.
import { createReadStream, statSync } from "node:fs";
import { isAscii } from "node:buffer";
import { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { createGunzip } from "node:zlib";

/**
 * A batch of lines of one source: lines[i] is line firstLine + i of `source`.
 * @typedef {{ source: string, firstLine: number, lines: string[] }} LineBatch
 */

/**
 * Progress through the inputs, in bytes as stored (compressed bytes for gzip): `total` is null when
 * unknown (standard input).
 * @typedef {{ read: number, total: number | null }} InputProgress
 */

/**
 * inputSize is the total size in bytes of the files named (null when one is standard input).
 * @param {readonly string[]} paths
 * @returns {number | null}
 */
export function inputSize(paths) {
  let total = 0;
  for (const path of paths) {
    if (path === "-") return null;
    total += statSync(path).size;
  }
  return total;
}

/**
 * readLines yields every line of `paths` ("-" is standard input) in batches; `progress.read` counts
 * the bytes read so far. A final line without a newline is a line; "\r\n" endings lose their "\r".
 * @param {readonly string[]} paths
 * @param {InputProgress} progress
 * @param {NodeJS.ReadableStream} [stdin]
 * @returns {AsyncGenerator<LineBatch>}
 */
export async function* readLines(paths, progress, stdin = process.stdin) {
  for (const path of paths) {
    const stream = path === "-" ? stdin : createReadStream(path, { highWaterMark: 1 << 20 });
    const source = path === "-" ? "stdin" : path;
    const decoder = new StringDecoder("utf8");
    let carry = "";
    let lineNumber = 1;
    for await (const chunk of decodedChunks(stream, progress)) {
      // ASCII (nearly every log) is copied as Latin-1, which needs no UTF-8 decoding; a character
      // left incomplete by the chunk before cannot continue in ASCII bytes, so end() flushes it as
      // U+FFFD, as the decoder would. The carried partial line joins the first line only: prefixing
      // it to the whole chunk would copy the chunk once more.
      const text = isAscii(chunk) ? decoder.end() + chunk.toString("latin1") : decoder.write(chunk);
      const lines = text.split("\n");
      lines[0] = carry + lines[0];
      carry = /** @type {string} */ (lines.pop());
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i];
        if (line.length > 0 && line.charCodeAt(line.length - 1) === 13) lines[i] = line.slice(0, -1);
      }
      if (lines.length > 0) yield { source, firstLine: lineNumber, lines };
      lineNumber += lines.length;
    }
    const last = carry + decoder.end();
    if (last.length > 0) yield { source, firstLine: lineNumber, lines: [last.endsWith("\r") ? last.slice(0, -1) : last] };
  }
}

// The stream's bytes, gunzipped when its first two bytes are gzip's magic (1f 8b).
/**
 * @param {NodeJS.ReadableStream} stream
 * @param {InputProgress} progress
 * @returns {AsyncGenerator<Buffer>}
 */
async function* decodedChunks(stream, progress) {
  const iterator = /** @type {AsyncIterator<Buffer | string>} */ (stream[Symbol.asyncIterator]());
  // A stream in text mode (setEncoding, or one made from strings) gives strings: as bytes again.
  const chunks = {
    async next() {
      const next = await iterator.next();
      return next.done ? next : { done: false, value: typeof next.value === "string" ? Buffer.from(next.value) : next.value };
    },
  };
  let first = await chunks.next();
  if (first.done) return;
  // A gzip header split across chunks is not missed: wait for two bytes.
  while (first.value.length < 2) {
    const next = await chunks.next();
    if (next.done) break;
    first = { done: false, value: Buffer.concat([first.value, next.value]) };
  }
  const head = first.value;
  async function* raw() {
    progress.read += head.length;
    yield head;
    for (;;) {
      const next = await chunks.next();
      if (next.done) return;
      progress.read += next.value.length;
      yield next.value;
    }
  }
  if (head[0] === 0x1f && head[1] === 0x8b) yield* Readable.from(raw()).pipe(createGunzip({ chunkSize: 1 << 20 }));
  else yield* raw();
}
