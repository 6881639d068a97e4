// The loaders of sluice.wasm and sluice-replay.wasm refuse a module that speaks another ABI version
// (sluice_abi_version, sluice_logpush_abi_version) before they call anything else in it: a .wasm left
// over from another build would otherwise be driven with the wrong layouts (the secret scan's tables,
// the I/O area, the replay's areas) and answer wrongly without an error. The modules of other versions
// here are real .wasm files, assembled byte by byte: a memory and one function returning the version
// they claim.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { ABI_VERSION, SluiceCore, SluiceError } from "../../wasm-bindings/sluice.js";
import { SecretScan } from "../../wasm-bindings/secret-scan.js";
import { LogpushScan } from "../../wasm-bindings/logpush-scan.js";

/**
 * A module exporting `memory` and `versionExport() -> version` (0 <= version < 64), nothing else:
 * `sluice_abi_version` as sluice.wasm names it, or `sluice_logpush_abi_version` as sluice-replay.wasm does.
 */
function moduleSpeaking(version, versionExport = "sluice_abi_version") {
  const name = (text) => [text.length, ...Buffer.from(text)];
  const section = (id, bytes) => [id, bytes.length, ...bytes];
  const exports = [2, ...name("memory"), 0x02, 0, ...name(versionExport), 0x00, 0];
  const body = [0, 0x41, version, 0x0b]; // no locals; i32.const version; end
  return new WebAssembly.Module(
    new Uint8Array([
      0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
      ...section(1, [1, 0x60, 0, 1, 0x7f]), // one type: () -> i32
      ...section(3, [1, 0]), // one function of that type
      ...section(5, [1, 0x00, 1]), // one memory of at least a page
      ...section(7, exports),
      ...section(10, [1, body.length, ...body]),
    ]),
  );
}

test("the module built here speaks the loaders' version", async () => {
  const bytes = readFileSync(new URL("../../wasm-bindings/sluice.wasm", import.meta.url));
  const module = await WebAssembly.compile(bytes);
  assert.equal(new WebAssembly.Instance(module, { env: { emscripten_notify_memory_growth() {} }, wasi_snapshot_preview1: { proc_exit() {} } }).exports.sluice_abi_version(), ABI_VERSION);
  assert.ok(SluiceCore.instantiate(module) instanceof SluiceCore);
  assert.ok(new SecretScan(module) instanceof SecretScan);
});

test("the replay's module built here speaks the loaders' version", async () => {
  const module = await WebAssembly.compile(readFileSync(new URL("../../wasm-bindings/sluice-replay.wasm", import.meta.url)));
  assert.equal(new WebAssembly.Instance(module, { env: { emscripten_notify_memory_growth() {} }, wasi_snapshot_preview1: { proc_exit() {} } }).exports.sluice_logpush_abi_version(), ABI_VERSION);
  assert.ok(new LogpushScan(module) instanceof LogpushScan);
});

test("the replay's module exports the Logpush reader and its version only", async () => {
  const module = await WebAssembly.compile(readFileSync(new URL("../../wasm-bindings/sluice-replay.wasm", import.meta.url)));
  const names = WebAssembly.Module.exports(module).map((entry) => entry.name).filter((name) => name.startsWith("sluice_")).sort();
  assert.deepEqual(names, ["sluice_logpush_abi_version", "sluice_logpush_areas", "sluice_logpush_reserve", "sluice_logpush_scan"]);
});

test("the replay's loader refuses a module that reports no version (a build from before it had one)", () => {
  assert.throws(() => new LogpushScan(moduleSpeaking(ABI_VERSION)), (error) => error instanceof RangeError && error.message.includes("ABI none") && error.message.includes(`${ABI_VERSION}`));
});

// The module's C ABI, as of the version below. An export added, removed or renamed fails this test:
// bump SLUICE_ABI_VERSION (sluice_abi.h) and ABI_VERSION (abi-version.js) with it, then the list.
// (Version 8 came late: sluice_scan_tables_add_run had been added under 7.)
const ABI_EXPORTS = {
  version: 8,
  names: [
    "sluice_abi_version", "sluice_add_rule", "sluice_check", "sluice_check_one", "sluice_concurrency", "sluice_error_field",
    "sluice_export_state", "sluice_give_back", "sluice_import_state", "sluice_init", "sluice_io_buffer", "sluice_lend",
    "sluice_reset", "sluice_scan", "sluice_scan_positions", "sluice_scan_reserve", "sluice_scan_tables_add_run",
    "sluice_scan_tables_free", "sluice_scan_tables_new", "sluice_scan_tables_ready", "sluice_state_buffer",
    "sluice_state_buffer_bytes", "sluice_stats",
  ],
};

test("the module's sluice_ exports are those recorded for its ABI version", async () => {
  const module = await WebAssembly.compile(readFileSync(new URL("../../wasm-bindings/sluice.wasm", import.meta.url)));
  const names = WebAssembly.Module.exports(module).map((entry) => entry.name).filter((name) => name.startsWith("sluice_")).sort();
  assert.equal(ABI_VERSION, ABI_EXPORTS.version, "the version changed: record its exports");
  assert.deepEqual(names, ABI_EXPORTS.names, "the exports changed: bump the ABI version");
});

test("the assembled module answers the version it was given (so the refusals below are the version's)", () => {
  const instance = new WebAssembly.Instance(moduleSpeaking(ABI_VERSION - 1));
  assert.equal(instance.exports.sluice_abi_version(), ABI_VERSION - 1);
});

for (const version of [ABI_VERSION - 1, ABI_VERSION + 1]) {
  test(`the limiter's loader refuses a .wasm of ABI ${version}, naming both versions`, () => {
    assert.throws(
      () => SluiceCore.instantiate(moduleSpeaking(version)),
      (error) => error instanceof SluiceError && error.message.includes(`ABI ${version}`) && error.message.includes(`${ABI_VERSION}`),
    );
  });

  test(`the replay's loader refuses a sluice-replay.wasm of ABI ${version}, naming both versions`, () => {
    assert.throws(
      () => new LogpushScan(moduleSpeaking(version, "sluice_logpush_abi_version")),
      (error) => error instanceof RangeError && error.message.includes(`ABI ${version}`) && error.message.includes(`${ABI_VERSION}`),
    );
  });

  test(`the secret scan's loader refuses a .wasm of ABI ${version}, naming both versions`, () => {
    assert.throws(
      () => new SecretScan(moduleSpeaking(version)),
      (error) => error.message.includes(`ABI ${version}`) && error.message.includes(`${ABI_VERSION}`),
    );
  });
}
