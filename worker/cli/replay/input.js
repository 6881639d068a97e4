// The lines of the logs to replay: files in the order given, or standard input ("-" or no file), each
// plain or gzip (found by its magic bytes, not its name; concatenated gzip members, as Logpush writes
// them, are read through). Lines come in batches, one per chunk read, so the caller pays no promise per
// line, and as byte ranges of the chunk, made strings one at a time as the caller reads them. A line's
// number is its number in its own file, from 1.
//
// A plain file is read into one buffer that is used again for every chunk (1 MiB reads; the partial
// line at its end moves to its front): allocating a fresh buffer per read cost the kernel's page
// faults, as much system time as the reading itself (bench/replay.js).
import { statSync } from "node:fs";
import { open } from "node:fs/promises";
import { isAscii } from "node:buffer";
import { Readable } from "node:stream";
import { createGunzip } from "node:zlib";

const CHUNK = 1 << 20;

/**
 * lineText is the text of bytes [start, end): Latin-1 when they are all ASCII (no decoding to do),
 * else UTF-8, an invalid sequence becoming U+FFFD as the decoder makes it.
 * @param {Buffer} bytes
 * @param {number} start
 * @param {number} end
 * @returns {string}
 */
export function lineText(bytes, start, end) {
  return isAscii(bytes.subarray(start, end)) ? bytes.latin1Slice(start, end) : bytes.utf8Slice(start, end);
}

/**
 * A batch of lines of one source: line firstLine + i of `source` is bytes[starts[i], ends[i]) (its
 * newline, and a "\r" before it, left out). The buffers are the reader's own and are overwritten
 * once the next batch is asked for: take what you need from a batch before asking for the next.
 */
export class LineBatch {
  /**
   * @param {string} source
   * @param {number} firstLine
   * @param {Buffer} bytes
   * @param {Int32Array} starts
   * @param {Int32Array} ends
   * @param {number} count
   */
  constructor(source, firstLine, bytes, starts, ends, count) {
    this.source = source;
    this.firstLine = firstLine;
    this.bytes = bytes;
    this.starts = starts;
    this.ends = ends;
    this.count = count;
    // One look at the whole batch: an ASCII batch (nearly every log) needs no per-line check.
    this.ascii = count > 0 && isAscii(bytes.subarray(starts[0], ends[count - 1]));
  }

  /** text is line i as a string (see lineText). @param {number} i */
  text(i) {
    return this.ascii ? this.bytes.latin1Slice(this.starts[i], this.ends[i]) : lineText(this.bytes, this.starts[i], this.ends[i]);
  }

  /** Every line of the batch as strings (for tests and small inputs; the replay reads bytes). */
  get lines() {
    return Array.from({ length: this.count }, (_, i) => this.text(i));
  }
}

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

// Where a source's bytes accumulate: the partial line carried from the chunk before, then the chunk.
class LineSplitter {
  constructor() {
    this.buffer = Buffer.allocUnsafe(CHUNK);
    this.carry = 0; // bytes [0, carry) of buffer: the start of a line whose end has not come yet
    this.starts = new Int32Array(1024);
    this.ends = new Int32Array(1024);
  }

  /** room makes space for `n` more bytes after the carry; returns the offset to write them at. @param {number} n */
  room(n) {
    if (this.carry + n > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.carry + n));
      this.buffer.copy(grown, 0, 0, this.carry);
      this.buffer = grown;
    }
    return this.carry;
  }

  /**
   * split finds the whole lines in buffer [0, end); returns their count (starts, ends filled).
   * The bytes after the last newline stay for keep().
   * @param {number} end
   */
  split(end) {
    const buffer = this.buffer;
    let count = 0;
    let start = 0;
    for (;;) {
      const newline = buffer.indexOf(10, start);
      if (newline < 0 || newline >= end) break;
      if (count === this.starts.length) this.#grow();
      this.starts[count] = start;
      this.ends[count] = newline > start && buffer[newline - 1] === 13 ? newline - 1 : newline;
      count++;
      start = newline + 1;
    }
    this.tail = start;
    this.end = end;
    return count;
  }

  /** keep moves the partial line after the last newline to the front, for the next chunk. */
  keep() {
    this.buffer.copyWithin(0, this.tail, this.end);
    this.carry = this.end - this.tail;
  }

  /** last is the final line when the input ended without a newline: its count (0 or 1). */
  last() {
    if (this.carry === 0) return 0;
    this.starts[0] = 0;
    this.ends[0] = this.buffer[this.carry - 1] === 13 ? this.carry - 1 : this.carry;
    this.carry = 0;
    return 1;
  }

  #grow() {
    const starts = new Int32Array(this.starts.length * 2);
    const ends = new Int32Array(this.ends.length * 2);
    starts.set(this.starts);
    ends.set(this.ends);
    this.starts = starts;
    this.ends = ends;
  }
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
  const splitter = new LineSplitter();
  for (const path of paths) {
    const source = path === "-" ? "stdin" : path;
    let lineNumber = 1;
    for await (const end of sourceChunks(path, splitter, progress, stdin)) {
      const count = splitter.split(end);
      if (count > 0) yield new LineBatch(source, lineNumber, splitter.buffer, splitter.starts, splitter.ends, count);
      lineNumber += count;
      splitter.keep();
    }
    if (splitter.last() > 0) yield new LineBatch(source, lineNumber, splitter.buffer, splitter.starts, splitter.ends, 1);
  }
}

// Puts each chunk of the source's bytes (gunzipped when its first two bytes are gzip's magic, 1f 8b)
// into the splitter's buffer after its carry, and yields where the bytes end.
/**
 * @param {string} path
 * @param {LineSplitter} splitter
 * @param {InputProgress} progress
 * @param {NodeJS.ReadableStream} stdin
 * @returns {AsyncGenerator<number>}
 */
async function* sourceChunks(path, splitter, progress, stdin) {
  if (path === "-") {
    yield* streamChunks(/** @type {AsyncIterable<Buffer | string>} */ (stdin), splitter, progress);
    return;
  }
  const file = await open(path, "r");
  try {
    // The first read decides: gzip goes through a stream (it needs buffers of its own), plain text
    // is read straight into the splitter's buffer.
    const head = Buffer.allocUnsafe(CHUNK);
    let headLength = (await file.read(head, 0, CHUNK, null)).bytesRead;
    while (headLength === 1) {
      const more = (await file.read(head, 1, CHUNK - 1, null)).bytesRead;
      if (more === 0) break;
      headLength += more;
    }
    if (headLength >= 2 && head[0] === 0x1f && head[1] === 0x8b) {
      async function* compressed() {
        yield head.subarray(0, headLength);
        for (;;) {
          const chunk = Buffer.allocUnsafe(CHUNK);
          const n = (await file.read(chunk, 0, CHUNK, null)).bytesRead;
          if (n === 0) return;
          yield chunk.subarray(0, n);
        }
      }
      yield* streamChunks(compressed(), splitter, progress);
      return;
    }
    progress.read += headLength;
    let at = splitter.room(headLength);
    head.copy(splitter.buffer, at, 0, headLength);
    yield at + headLength;
    for (;;) {
      at = splitter.room(CHUNK);
      const n = (await file.read(splitter.buffer, at, CHUNK, null)).bytesRead;
      if (n === 0) return;
      progress.read += n;
      yield at + n;
    }
  } finally {
    await file.close();
  }
}

// A stream's chunks (a stream in text mode gives strings: bytes again), each copied after the carry;
// gunzipped first when the stream starts with gzip's magic. `progress` counts the bytes as stored.
/**
 * @param {AsyncIterable<Buffer | string>} stream
 * @param {LineSplitter} splitter
 * @param {InputProgress} progress
 * @returns {AsyncGenerator<number>}
 */
async function* streamChunks(stream, splitter, progress) {
  const iterator = stream[Symbol.asyncIterator]();
  const next = async () => {
    const step = await iterator.next();
    if (step.done) return null;
    const chunk = typeof step.value === "string" ? Buffer.from(step.value) : step.value;
    progress.read += chunk.length;
    return chunk;
  };
  let head = await next();
  if (head === null) return;
  // A gzip header split across chunks is not missed: wait for two bytes.
  while (head.length < 2) {
    const more = await next();
    if (more === null) break;
    head = Buffer.concat([head, more]);
  }
  /** @type {AsyncIterable<Buffer>} */
  let chunks;
  const first = head;
  async function* raw() {
    yield first;
    for (let chunk = await next(); chunk !== null; chunk = await next()) yield chunk;
  }
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) chunks = Readable.from(raw()).pipe(createGunzip({ chunkSize: CHUNK }));
  else chunks = raw();
  // A stream may give chunks of any size (a generated log, a string of megabytes): they are copied a
  // read's worth at a time, so the buffer stays the size of a read and the longest line.
  for await (const chunk of chunks) {
    for (let from = 0; from < chunk.length; from += CHUNK) {
      const piece = Math.min(CHUNK, chunk.length - from);
      const at = splitter.room(piece);
      chunk.copy(splitter.buffer, at, from, from + piece);
      yield at + piece;
    }
  }
}
