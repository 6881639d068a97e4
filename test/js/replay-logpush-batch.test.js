// The replay's Logpush reader in the C++ core (formats/logpush-batch.js, sluice/logpush_scan.hpp)
// against parseLogpushLine, line by line: every line's record (or null) must be the one JSON.parse's
// path gives, over realistic lines and hostile ones, and each verdict must be true of JSON.parse
// (a line called "not JSON" is one JSON.parse throws on, a record or no-record line one it accepts).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { random } from "../../bench/worker/workload.js";
import { LogpushBatchReader, LogpushLine } from "../../worker/cli/replay/formats/logpush-batch.js";
import { parseLogpushLine } from "../../worker/cli/replay/formats/logpush.js";
import { LineBatch } from "../../worker/cli/replay/input.js";
import replayWasm from "../../wasm-bindings/replay-module-node.js";
import { logpushLine, traffic } from "./fixtures/replay/traffic.js";

const reader = new LogpushBatchReader();

/** A batch of `lines` (strings, or Buffers for bytes that are no UTF-8), one newline between each. @param {(string | Buffer)[]} lines */
function batchOf(lines) {
  const parts = lines.map((l) => (typeof l === "string" ? Buffer.from(l, "utf8") : l));
  const starts = new Int32Array(parts.length);
  const ends = new Int32Array(parts.length);
  let at = 0;
  parts.forEach((p, i) => {
    starts[i] = at;
    ends[i] = at + p.length;
    at += p.length + 1;
  });
  return new LineBatch("test", 1, Buffer.concat(parts.flatMap((p) => [p, Buffer.from("\n")])), starts, ends, parts.length);
}

/** Whether the replay counts the line as blank (replay.js). @param {string} line */
const isBlank = (line) => line.length === 0 || (line.charCodeAt(0) <= 32 && line.trim() === "");

/**
 * compare reads `lines` as one batch and checks each line; returns how many lines had each verdict.
 * @param {(string | Buffer)[]} lines
 */
function compare(lines) {
  const batch = batchOf(lines);
  assert.equal(reader.read(batch), true);
  /** @type {Record<number, number>} */
  const verdicts = {};
  for (let i = 0; i < batch.count; i++) {
    const text = batch.text(i);
    const kind = reader.kind(i);
    verdicts[kind] = (verdicts[kind] ?? 0) + 1;
    const where = `line ${i}: ${JSON.stringify(text).slice(0, 300)} (verdict ${kind})`;
    assert.deepStrictEqual(reader.recordAt(i), isBlank(text) ? null : parseLogpushLine(text), where);
    let parsed;
    let threw = false;
    try {
      parsed = JSON.parse(text);
    } catch {
      threw = true;
    }
    if (kind === LogpushLine.BLANK) assert.ok(isBlank(text), where);
    else if (kind !== LogpushLine.FALLBACK) assert.ok(!isBlank(text), where);
    if (kind === LogpushLine.NOT_JSON) assert.ok(threw, where);
    if (kind === LogpushLine.RECORD || kind === LogpushLine.NO_RECORD) assert.ok(!threw && parsed !== null && typeof parsed === "object" && !Array.isArray(parsed), where);
    if (kind === LogpushLine.NOT_OBJECT) assert.ok(threw || parsed === null || typeof parsed !== "object" || Array.isArray(parsed), where);
  }
  return verdicts;
}

const realistic = traffic({ seed: 21, count: 600, clients: 80, abusers: 3 });
const forms = /** @type {const} */ (["unixnano", "unix", "rfc3339"]);
const realisticLines = realistic.map((r, i) => logpushLine(r, forms[i % 3]));

/** The members of a realistic line as [key, JSON text of the value], in order, to rearrange. @param {string} line */
const membersOf = (line) => Object.entries(JSON.parse(line)).map(([k, v]) => [k, JSON.stringify(v)]);
/** @param {string[][]} members @param {string} [sep] */
const lineOf = (members, sep = ",") => `{${members.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(sep)}}`;

describe("the Logpush reader in the core gives parseLogpushLine's records", () => {
  test("realistic lines (every timestamp form, with and without request headers) are read by the core, none by the fallback", () => {
    const verdicts = compare(realisticLines);
    assert.equal(verdicts[LogpushLine.RECORD], realisticLines.length, JSON.stringify(verdicts));
  });

  test("numbers as time and status: exponents, fractions, -0, 1.0, huge, tiny, 19 digits and more", () => {
    const rand = random(5);
    const numbers = ["0", "-0", "1.0", "200", "200.0", "2e2", "2E+2", "20000e-2", "1e3", "1e21", "2e400", "-2e400", "1e-400", "4.9e-324", "1.7976931348623157e308", "9007199254740993", "18446744073709551615", "18446744073709551616", "99999999999999999999", "1764460800123456789", "1764460800123456789.5", "1795996915.306", "1795996915.3065", "0.1", "-1", "-200", "199.99999999999999999999", "1764460800123.000001", "00", "01", "1.", ".5", "+1", "1e", "1e+", "--1", "-", "0x10", "1_000", "NaN", "Infinity", "1E400", "123456789012345678901234567890"];
    for (let k = 0; k < 300; k++) {
      const digits = 1 + Math.floor(rand() * 22);
      let n = String(1 + Math.floor(rand() * 9));
      for (let d = 1; d < digits; d++) n += String(Math.floor(rand() * 10));
      const dot = Math.floor(rand() * (digits + 2));
      if (dot > 0 && dot < digits) n = `${n.slice(0, dot)}.${n.slice(dot)}`;
      if (rand() < 0.3) n += `e${rand() < 0.5 ? "-" : ""}${Math.floor(rand() * 30)}`;
      numbers.push(rand() < 0.1 ? `-${n}` : n);
    }
    const base = membersOf(realisticLines[0]);
    const lines = [];
    for (const n of numbers) {
      lines.push(lineOf(base.map(([k, v]) => [k, k === "EdgeStartTimestamp" ? n : v])));
      lines.push(lineOf(base.map(([k, v]) => [k, k === "EdgeResponseStatus" ? n : v])));
      lines.push(lineOf(base.map(([k, v]) => [k, k === "EdgeStartTimestamp" ? JSON.stringify(n) : v])));
    }
    compare(lines);
  });

  test("duplicate keys in every order, case variants of keys, values of every type in every field", () => {
    const base = membersOf(realisticLines[1]);
    const values = ['"x"', '""', '"/"', '"/a"', '"GET"', '"get"', '"GETGETGETGETGETGETGET"', "1", "null", "true", "false", "[]", '["/a"]', "{}", '{"a":"b"}', '"1.2.3.4"', '"1764460800"', '"2026-11-30T00:00:00Z"', '"2026-11-30"'];
    const names = ["ClientIP", "ClientRequestHost", "ClientRequestMethod", "ClientRequestURI", "ClientRequestPath", "EdgeResponseStatus", "EdgeStartTimestamp", "RequestHeaders", "clientip", "CLIENTIP", "ClientIp", "ClientIP ", "__proto__", "constructor"];
    const lines = [];
    for (const name of names) {
      for (const value of values) {
        lines.push(lineOf([...base, [name, value]]));
        lines.push(lineOf([[name, value], ...base]));
        lines.push(lineOf([...base.filter(([k]) => k !== name), [name, value]]));
        lines.push(lineOf([[name, value], ...base, [name, value]]));
      }
    }
    // Every pair of orders of two occurrences of each field, the record's and another value.
    for (const [k, v] of base) for (const other of ['"/z"', "7", "null"]) lines.push(lineOf([[k, other], ...base]), lineOf([...base, [k, other]]));
    compare(lines);
  });

  test("request headers: several, non-string values, names in two cases, digits, escapes, nested, repeated, not objects", () => {
    const base = membersOf(realisticLines[2]).filter(([k]) => k !== "RequestHeaders");
    const headerSets = [
      '{"Authorization":"Bearer a","X-API-Key":"k"}',
      '{"authorization":"Bearer a","Authorization":"Bearer b"}',
      '{"authorization":"Bearer a","authorization":"Bearer b"}',
      '{"a":1,"A":"x"}',
      '{"a":"x","a":1}',
      '{"1":"one","b":"two"}',
      '{"b":"two","1":"one"}',
      '{"0x":"z"}',
      '{"a":{"b":"c"},"d":["e"],"f":null,"g":true}',
      '{"a":"\\u0041","b":"c"}',
      '{"\\u0061":"x"}',
      '{"a":"x"',
      '{"a" "x"}',
      '{"a":"x",}',
      "{}",
      "[]",
      '["a"]',
      '"a"',
      "null",
      "5",
      '{"__proto__":"p","constructor":"c"}',
      `{${Array.from({ length: 16 }, (_, i) => `"h${i}":"v${i}"`).join(",")}}`,
      `{${Array.from({ length: 17 }, (_, i) => `"h${i}":"v${i}"`).join(",")}}`,
      `{${Array.from({ length: 40 }, (_, i) => `"h${i}":${i % 2 ? `"v${i}"` : i}`).join(",")}}`,
      '{ "a" : "x" , "b" : "y" }',
      '{"cookie":"a=b; c=d","x-forwarded-for":"1.2.3.4, 5.6.7.8"}',
    ];
    const lines = [];
    for (const h of headerSets) {
      lines.push(lineOf([...base, ["RequestHeaders", h]]));
      lines.push(lineOf([["RequestHeaders", h], ...base]));
      lines.push(lineOf([["RequestHeaders", '{"authorization":"first"}'], ...base, ["RequestHeaders", h]]));
      lines.push(lineOf([["RequestHeaders", h], ...base, ["RequestHeaders", '{"authorization":"last"}']]));
    }
    // Enough headers in one batch to fill the headers area: later records fall back, still the same.
    for (let i = 0; i < 40; i++) lines.push(lineOf([...base, ["RequestHeaders", headerSets[21]]]));
    compare(lines);
  });

  test("escapes, control bytes, \\u0000, lone surrogates, non-ASCII, invalid UTF-8, BOM, request.cf fields", () => {
    const base = membersOf(realisticLines[3]);
    const lines = [];
    const strings = ['"a\\"b"', '"\\u0000"', '"\\ud800"', '"\\udc00x"', '"\\uD83D\\uDE00"', '"\\/x"', '"\\x41"', '"\\u00e9"', '"\\u12"', '"\\u12G4"', '"\u0001"', '"\t"', '"\u007f"', '"é"', '"日本"', '"\\\\"', '"/a\\/b"', '"/\\u0061"', '"a\\'];
    for (const s of strings) {
      for (const k of ["ClientIP", "ClientRequestURI", "ClientRequestMethod", "ClientRequestHost", "EdgeStartTimestamp", "EdgeResponseStatus", "RayID", "ClientRequestUserAgent"]) {
        lines.push(lineOf(base.map(([n, v]) => [n, n === k ? s : v])));
      }
      lines.push(`{${s.replace(/^"/, '"Client').replace(/"$/, 'IP"')}:"1.1.1.1",${lineOf(base).slice(1)}`);
    }
    lines.push(lineOf(base).replace('"ClientIP"', '"Client\\u0049P"'));
    lines.push(lineOf([["Client\u0049P", '"9.9.9.9"'], ...base]).replace("ClientIP", "Client\\u0049P"));
    lines.push(`\ufeff${lineOf(base)}`);
    lines.push(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lineOf(base))]));
    lines.push(Buffer.from([0xef, 0xbb, 0xbf]));
    lines.push("\u00a0");
    lines.push("\u2028");
    const raw = Buffer.from(lineOf(base));
    for (const bad of [[0x80], [0xff], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]) {
      const at = raw.indexOf("Mozilla") + 3;
      lines.push(Buffer.concat([raw.subarray(0, at), Buffer.from(bad), raw.subarray(at)]));
      lines.push(Buffer.concat([raw, Buffer.from(bad)]));
      lines.push(Buffer.concat([raw.subarray(0, 1), Buffer.from(bad), raw.subarray(1)]));
    }
    for (const [k, v] of [["ClientCountry", '"us"'], ["ClientASN", "13335"], ["EdgeColoCode", '"AMS"'], ["ClientRegionCode", '"NH"'], ["BotScore", "99"], ["VerifiedBot", "false"], ["JA3Hash", '"abc"'], ["JA4", '"t13"'], ["ClientCountry", "null"], ["BotScore", '"x"']]) {
      lines.push(lineOf([...base, [k, v]]));
      lines.push(lineOf([[k, v], ...base]));
    }
    compare(lines);
  });

  test("white space everywhere, CR, VT and FF, truncations at every byte, trailing bytes, other top-level values, deep nesting", () => {
    const members = membersOf(realisticLines[4]);
    const line = lineOf(members);
    const lines = [];
    for (const ws of [" ", "\t", "\r", "\r\n".slice(0, 1), "  \t\r ", "\v", "\f", "\u001c", "\u0085"]) {
      lines.push(`${ws}${line}${ws}`);
      lines.push(`{${ws}${members.map(([k, v]) => `${ws}${JSON.stringify(k)}${ws}:${ws}${v}${ws}`).join(",")}}`);
      lines.push(ws, `${ws}${ws}`, `${ws}x`);
    }
    for (let cut = 0; cut <= line.length; cut++) lines.push(line.slice(0, cut));
    for (const tail of ["x", "}", ",", " }", "{}", "\u0000", "// c", "\"", "]", " 1"]) lines.push(`${line}${tail}`);
    for (const other of ["[]", "[1,2]", "1", "-1", '"s"', "null", "true", "false", "nul", "tru", "{", "}", "[", "{}", "{ }", '{"a":1}', '{"a":1,}', '{,}', '{"a"}', '{"a":}', "{'a':1}", '{"a":01}', '{"a":1.}', '{"a":.1}', '{"a":-}', '{"a":+1}', '{"a":1e}', '{"a":[1,]}', '{"a":[,1]}', '{"a":{"b":1,}}', '{"a":tRue}', '{"a":nulll}', '{"a":"b"}{"c":"d"}']) {
      lines.push(other, `${other.slice(0, -1)}${other.endsWith("}") && other.length > 2 ? `,${line.slice(1)}` : other.slice(-1)}`);
    }
    for (const depth of [1, 10, 62, 63, 64, 65, 100, 2000]) {
      const nest = `${"[".repeat(depth)}1${"]".repeat(depth)}`;
      lines.push(lineOf([...members, ["Deep", nest]]));
      lines.push(lineOf([...members, ["Deep", `${"[".repeat(depth)}1${"]".repeat(depth - 1)}`]]));
      lines.push(lineOf([...members, ["Deep", `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`]]));
    }
    compare(lines);
  });

  test("strings kept across batches (methods, hosts, header names) stay right when other batches replace them", () => {
    // Many hosts and header names, so that slots of the module's string table are taken over from
    // batch to batch, and batches of every size from 1 line up, some read twice.
    const rand = random(17);
    const lines = realistic.map((r, i) => {
      const members = membersOf(logpushLine(r));
      return lineOf(members.map(([k, v]) => [k, k === "ClientRequestHost" ? JSON.stringify(`h${Math.floor(rand() * 3000)}.example`) : k === "RequestHeaders" ? `{"x-n${i % 5000}":"v","X-M${Math.floor(rand() * 9000)}":"w"}` : v]));
    });
    for (let round = 0; round < 40; round++) {
      const from = Math.floor(rand() * lines.length);
      const size = 1 + Math.floor(rand() * (round % 2 ? 600 : 20));
      const batch = Array.from({ length: size }, (_, k) => lines[(from + k * 7) % lines.length]);
      compare(batch);
      if (round % 5 === 0) compare(batch);
    }
  });

  test("random mutations of realistic lines: a byte changed, removed, doubled or inserted", () => {
    const rand = random(99);
    const alphabet = ' \t\r"\\{}[]:,.-+eE0123456789aflnrstu/xX';
    const lines = [];
    for (let k = 0; k < 4000; k++) {
      let line = realisticLines[k % realisticLines.length];
      for (let m = 0, edits = 1 + Math.floor(rand() * 3); m < edits; m++) {
        const at = Math.floor(rand() * line.length);
        const c = alphabet[Math.floor(rand() * alphabet.length)];
        const op = Math.floor(rand() * 4);
        line = op === 0 ? line.slice(0, at) + c + line.slice(at + 1) : op === 1 ? line.slice(0, at) + line.slice(at + 1) : op === 2 ? line.slice(0, at) + line[at] + line.slice(at) : line.slice(0, at) + c + line.slice(at);
      }
      lines.push(line);
    }
    const verdicts = compare(lines);
    // The mutations reach every verdict but the blank one.
    for (const kind of [LogpushLine.NOT_JSON, LogpushLine.NO_RECORD, LogpushLine.RECORD, LogpushLine.FALLBACK]) assert.ok(verdicts[kind] > 0, `${kind}: ${JSON.stringify(verdicts)}`);
  });
});

test("the Logpush reader is a module of its own: sluice.wasm, which Workers bundle, exports none of it", () => {
  const names = (/** @type {WebAssembly.Module} */ module) => WebAssembly.Module.exports(module).map((entry) => entry.name);
  const workerModule = new WebAssembly.Module(readFileSync(new URL("../../wasm-bindings/sluice.wasm", import.meta.url)));
  assert.deepEqual(names(workerModule).filter((name) => name.startsWith("sluice_logpush")), []);
  assert.ok(names(workerModule).includes("sluice_check"), "the limiter is there");
  for (const name of ["sluice_logpush_reserve", "sluice_logpush_areas", "sluice_logpush_scan"]) assert.ok(names(replayWasm).includes(name), name);
  assert.deepEqual(names(replayWasm).filter((name) => name === "sluice_check" || name.startsWith("sluice_scan")), [], "and the reader's module has no limiter");
});
