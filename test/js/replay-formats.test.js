// sluice replay's inputs (worker/cli/replay/formats, input.js): each format read into the same
// records from generated logs, every timestamp form Logpush writes, gzip and plain alike, and the
// junk lines real logs carry counted with their line numbers, never fatal.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { parseCombinedLine } from "../../worker/cli/replay/formats/combined.js";
import { csvParser, parseColumnMap, splitCsvLine } from "../../worker/cli/replay/formats/csv.js";
import { detectFormat } from "../../worker/cli/replay/formats/detect.js";
import { parseLogpushLine } from "../../worker/cli/replay/formats/logpush.js";
import { timestampMs } from "../../worker/cli/replay/formats/timestamp.js";
import { readLines } from "../../worker/cli/replay/input.js";
import { CSV_COLUMNS, CSV_HEADER, MALFORMED, combinedLine, csvLine, logpushLine, traffic } from "./fixtures/replay/traffic.js";

const requests = traffic({ seed: 7, count: 400, clients: 60 });
const dir = mkdtempSync(join(tmpdir(), "sluice-replay-formats-"));

/** What every format must agree on for a request (combined logs have no host and no headers). */
const core = (/** @type {any} */ r) => ({ timeMs: r.timeMs, ip: r.ip, method: r.method, uri: r.uri, status: r.status });

describe("timestamps", () => {
  test("Logpush's unixnano, unix (fractional seconds), RFC 3339 and milliseconds all read as the same millisecond", () => {
    const ms = Date.UTC(2026, 10, 30, 12, 34, 56, 789);
    assert.equal(timestampMs(ms * 1e6), ms);
    assert.equal(timestampMs(String(ms * 1e6)), ms);
    assert.equal(timestampMs(ms / 1000), ms);
    assert.equal(timestampMs(ms), ms);
    assert.equal(timestampMs(ms * 1000), ms);
    assert.equal(timestampMs(new Date(ms).toISOString()), ms);
    assert.equal(timestampMs("2026-11-30T13:34:56.789+01:00"), ms);
  });

  test("anything else is not a time", () => {
    for (const bad of ["yesterday", "2026-11-30", "", -5, null, {}, Number.NaN, "12:00:00Z"]) assert.ok(Number.isNaN(timestampMs(bad)), String(bad));
  });
});

describe("the three formats read the same requests", () => {
  test("Logpush lines (each timestamp form) give the request, its host and its logged headers", () => {
    for (const form of /** @type {const} */ (["unixnano", "unix", "rfc3339"])) {
      for (const r of requests) {
        const record = parseLogpushLine(logpushLine(r, form));
        assert.ok(record !== null);
        assert.deepEqual(core(record), core(r));
        assert.equal(record.host, r.host);
        assert.equal(record.headers?.authorization ?? null, r.authorization);
        assert.equal(record.headers?.["x-api-key"] ?? null, r.apiKey);
      }
    }
  });

  test("combined lines (nginx and Apache, a +0100 zone) give the request", () => {
    for (const r of requests) {
      const record = parseCombinedLine(combinedLine(r));
      assert.ok(record !== null);
      // The combined format has whole seconds only.
      assert.deepEqual(core(record), { ...core(r), timeMs: Math.floor(r.timeMs / 1000) * 1000 });
      assert.equal(record.headers, null);
    }
  });

  test("CSV rows through a column map give the request and the mapped header", () => {
    const parse = csvParser(CSV_HEADER, parseColumnMap(CSV_COLUMNS));
    for (const r of requests) {
      const record = parseCsv(parse, csvLine(r));
      assert.deepEqual(core(record), core(r));
      assert.equal(record.headers?.authorization ?? null, r.authorization);
    }
  });

  test("CSV quoting: commas and doubled quotes inside quotes", () => {
    assert.deepEqual(splitCsvLine('a,"b,c","say ""hi""",'), ["a", "b,c", 'say "hi"', ""]);
    assert.equal(splitCsvLine('a,"unclosed'), null);
  });

  test("CSV without a map finds Logpush's and plain column names; a missing column is named", () => {
    const parse = csvParser("EdgeStartTimestamp,ClientIP,ClientRequestMethod,ClientRequestURI");
    assert.equal(parse(`${1e18},192.0.2.1,GET,/x`)?.ip, "192.0.2.1");
    assert.throws(() => csvParser("ts,addr,verb"), /--columns: no column for time.*--columns time=<column>/);
    assert.throws(() => csvParser(CSV_HEADER, parseColumnMap("time=nope,ip=client_addr,method=verb,uri=request_uri")), /time=nope: no such column/);
    assert.throws(() => parseColumnMap("when=ts"), /unknown field "when"/);
  });

  test("the format is found from the first line", () => {
    assert.equal(detectFormat(logpushLine(requests[0])), "logpush");
    assert.equal(detectFormat(combinedLine(requests[0])), "combined");
    assert.equal(detectFormat(CSV_HEADER), "csv");
  });
});

describe("junk lines", () => {
  test("every malformed line of each format is refused (null), none throws", () => {
    for (const line of MALFORMED.logpush) assert.equal(parseLogpushLine(line), null, line);
    for (const line of MALFORMED.combined) assert.equal(parseCombinedLine(line), null, line);
    const parse = csvParser(CSV_HEADER, parseColumnMap(CSV_COLUMNS));
    for (const line of MALFORMED.csv) assert.equal(parse(line), null, line);
  });

  test("a Logpush line without a usable URI, method or address is refused", () => {
    const good = JSON.parse(logpushLine(requests[0]));
    for (const change of [{ ClientRequestURI: "http://x/" }, { ClientRequestMethod: "get" }, { ClientIP: "" }, { EdgeStartTimestamp: -1 }]) {
      assert.equal(parseLogpushLine(JSON.stringify({ ...good, ...change })), null, JSON.stringify(change));
    }
  });
});

describe("inputs", () => {
  const lines = requests.map((r) => logpushLine(r));
  const text = `${lines.join("\r\n")}\r\n`;

  test("gzip (found by its magic bytes, whatever the name) and plain give the same lines, CRLF or not", async () => {
    const plain = join(dir, "plain.log");
    const gz = join(dir, "compressed.log");
    writeFileSync(plain, text);
    writeFileSync(gz, gzipSync(text));
    assert.deepEqual(await collect([plain]), lines);
    assert.deepEqual(await collect([gz]), lines);
  });

  test("concatenated gzip members (as Logpush batches are joined) read through", async () => {
    const joined = join(dir, "members.log.gz");
    writeFileSync(joined, Buffer.concat([gzipSync(`${lines.slice(0, 100).join("\n")}\n`), gzipSync(lines.slice(100).join("\n"))]));
    assert.deepEqual(await collect([joined]), lines);
  });

  test("standard input, gzip too, and line numbers count per file from 1", async () => {
    const stdin = Readable.from([gzipSync(text)]);
    const batches = [];
    for await (const batch of readLines(["-"], { read: 0, total: null }, stdin)) batches.push(batch);
    assert.equal(batches[0].source, "stdin");
    assert.equal(batches[0].firstLine, 1);
    assert.deepEqual(batches.flatMap((b) => b.lines), lines);
  });

  test("a stream in text mode (strings, not bytes) reads the same", async () => {
    const out = [];
    for await (const batch of readLines(["-"], { read: 0, total: null }, Readable.from([lines[0].slice(0, 10), `${lines[0].slice(10)}\n${lines[1]}`]))) out.push(...batch.lines);
    assert.deepEqual(out, [lines[0], lines[1]]);
  });

  test("a line split across read chunks, and a multi-byte character split across them, arrive whole", async () => {
    const line = '{"ClientRequestURI":"/caf\u00e9"}';
    const bytes = Buffer.from(`${line}\n${line}`);
    const stdin = Readable.from([bytes.subarray(0, 24), bytes.subarray(24, 25), bytes.subarray(25)]);
    const out = [];
    for await (const batch of readLines(["-"], { read: 0, total: null }, stdin)) out.push(...batch.lines);
    assert.deepEqual(out, [line, line]);
  });
});

describe("inputs larger than a read", () => {
  test("lines across the 1 MiB reads of a file, one longer than a read, non-ASCII ones, and a last line without a newline arrive whole", async () => {
    const rand = (/** @type {number} */ i) => (i * 2654435761) >>> 0;
    const lines = [];
    for (let i = 0; i < 30_000; i++) lines.push(`${i}:${"x".repeat(rand(i) % 180)}${i % 997 === 0 ? "caf\u00e9 \u2713" : ""}`);
    lines.splice(12_345, 0, "y".repeat(1_500_000));
    const file = join(dir, "large.log");
    writeFileSync(file, `${lines.join("\n")}\r`);
    assert.deepEqual(await collect([file]), lines);
    // The same bytes gzipped, from a file and as a stream whose chunks split lines anywhere.
    const gz = join(dir, "large.log.gz");
    writeFileSync(gz, gzipSync(`${lines.join("\n")}\r`));
    assert.deepEqual(await collect([gz]), lines);
    const bytes = Buffer.from(`${lines.join("\r\n")}\n`);
    const pieces = [];
    for (let at = 0, k = 0; at < bytes.length; k++) {
      const size = 1 + (rand(k) % 300_000);
      pieces.push(bytes.subarray(at, at + size));
      at += size;
    }
    const out = [];
    for await (const batch of readLines(["-"], { read: 0, total: null }, Readable.from(pieces))) out.push(...batch.lines);
    assert.deepEqual(out, lines);
  });
});

/** @param {string[]} paths */
async function collect(paths) {
  const out = [];
  for await (const batch of readLines(paths, { read: 0, total: null })) out.push(...batch.lines);
  return out;
}

/** @param {(line: string) => any} parse @param {string} line */
function parseCsv(parse, line) {
  const record = parse(line);
  assert.ok(record !== null, line);
  return record;
}
