/* The C ABI of sluice.wasm: the complete list of what the module exports (see README: "The boundary").
 *
 * One limiter per module instance. Keys, checks and results pass through one I/O area in linear
 * memory, allocated once; no call allocates. Times and counts cross as doubles holding whole numbers
 * (exact up to 2^53), since i64 would cross as BigInt. Failures are negative status codes, never traps.
 *
 * I/O area layout, from sluice_io_buffer(), little-endian:
 *   [0, 8192)      keys: check i's key bytes start at SLUICE_KEY_STRIDE * i
 *   [8192, 8448)   checks: 16 x { u32 rule, u32 key_offset, u32 key_length, u32 cost }
 *   [8448, 8496)   outcome: f64 allowed, limit, remaining, reset_ms, retry_after_ms, deciding_check
 *   [8496, 9136)   per-check decisions: 16 x f64 { allowed, limit, remaining, reset_ms, retry_after_ms },
 *                  written only when a call has several checks: a single check's decision is the outcome's
 * retry_after_ms is -1 for "never".
 * Version 5: sluice_add_rule takes SLUICE_RULE_COUNT_DENIED; sluice_stats writes 7 numbers, the fifth no
 * longer evictions of exhausted keys but evictions of still-restricting keys.
 * Version 6: sluice_add_rule takes block_ms (0: throttle; else a key that exceeds the rule is blocked).
 * Version 7: a fixed window or sliding counter lends its next window ahead near its end.
 * Version 8: the secret scan's tables hold the sparse scan's runs (sluice_scan_tables_add_run, new), and
 * their layout changed with them. */
#ifndef SLUICE_ABI_H
#define SLUICE_ABI_H
#include <stdint.h>

#define SLUICE_ABI_VERSION 8
#define SLUICE_KEY_STRIDE 512
#define SLUICE_IO_CHECKS_OFFSET 8192
#define SLUICE_IO_OUTCOME_OFFSET 8448
#define SLUICE_IO_DECISIONS_OFFSET 8496
#define SLUICE_IO_BYTES 9136

/* sluice_add_rule: OR'd into `algorithm`, options of the rule. COUNT_DENIED (sliding counter only):
 * denied requests count too, as in Cloudflare's counter. */
#define SLUICE_RULE_COUNT_DENIED 0x100u
/* sluice_concurrency operations (sluice::concurrency::Op). */
#define SLUICE_CONCURRENCY_ACQUIRE 0u
#define SLUICE_CONCURRENCY_RELEASE 1u
#define SLUICE_CONCURRENCY_RENEW 2u

/* sluice_check flags. */
#define SLUICE_CHECK_CHARGE 1u
#define SLUICE_CHECK_KEY0_UNCHANGED 2u

#ifdef __cplusplus
extern "C" {
#endif

uint32_t sluice_abi_version(void);
/* Creates the limiter with a 128-bit hash seed. Once per instance. */
int32_t sluice_init(uint32_t seed0, uint32_t seed1, uint32_t seed2, uint32_t seed3);
uint32_t sluice_io_buffer(void);
/* Adds a rule; returns its id (>= 0) or a negative status; on -2 (invalid rule),
 * sluice_error_field() points at the NUL-terminated name of the offending field. block_ms: 0 throttles
 * (only the excess is denied); otherwise a key that exceeds the rule is denied everything for block_ms
 * or until its quota would be whole again, whichever is later (sluice/block.hpp). */
int32_t sluice_add_rule(uint32_t algorithm, double limit, double window_ms, double burst, uint32_t key_capacity,
                        double block_ms);
uint32_t sluice_error_field(void);
/* Decides the `count` checks of the I/O area at now_ms. Flags: SLUICE_CHECK_CHARGE charges them (else
 * a peek); SLUICE_CHECK_KEY0_UNCHANGED says the bytes at the start of the key area were not rewritten
 * since the previous sluice_check, whose hash of them is then reused (never by any other call). */
int32_t sluice_check(uint32_t count, double now_ms, uint32_t flags);
/* One check of the key at the start of the key area, arguments as parameters (flags as sluice_check's).
 * Returns 1 when admitted, 0 when denied, or a negative status; the decision goes to the outcome. */
int32_t sluice_check_one(uint32_t rule, uint32_t key_length, uint32_t cost, double now_ms, uint32_t flags);
/* Forgets the key at the start of the I/O area. */
int32_t sluice_reset(uint32_t rule, uint32_t key_length);
/* The state area holds one key's exported state; its size fits every rule added so far. */
uint32_t sluice_state_buffer(void);
uint32_t sluice_state_buffer_bytes(void);
/* Exports the key at the start of the I/O area into the state area; returns its length or a negative status. */
int32_t sluice_export_state(uint32_t rule, uint32_t key_length);
/* Imports `length` bytes of the state area as the state of the key at the start of the I/O area. */
int32_t sluice_import_state(uint32_t rule, uint32_t key_length, uint32_t length);
/* Writes 7 f64 from the outcome offset on (the last one spills into the decisions area): { keys, slots,
 * memory_bytes (table + eviction summary), evictions, evictions_restricting (evicted keys that still
 * owed something, folded into the summary: the table-too-small signal), summary_starts (charged
 * requests of keys not in the table that started from the summary), summary_bytes }. */
int32_t sluice_stats(uint32_t rule);
/* Acquires `cost` units for `holder`, releases all of its units, or renews their lease (`op`, above) on
 * the key at the start of the key area, for a concurrency rule (algorithm 6). Returns 1 when acquired /
 * when the holder had live units to release or renew, 0 otherwise, or a negative status; the decision
 * (the key afterwards) goes to the outcome. `cost` is read by acquire only. */
int32_t sluice_concurrency(uint32_t rule, uint32_t key_length, uint32_t op, uint32_t holder, uint32_t cost, double now_ms);
/* Leases (sluice/lease.hpp). Lends up to `wanted` units of the key at the start of the key area for at
 * most lease_ms from now_ms (a fixed window or sliding counter whose window ends within ahead_ms: from
 * the next window, usable from its start); writes f64 { units, expires_at_ms, remaining, starts_at_ms }
 * at the outcome offset and returns the units lent (>= 0) or a negative status. */
int32_t sluice_lend(uint32_t rule, uint32_t key_length, uint32_t wanted, double lease_ms, double now_ms, double ahead_ms);
/* Gives back `units` unused units of a lease of that key that expires at expires_at_ms; returns how
 * many the key took back (>= 0) or a negative status. */
int32_t sluice_give_back(uint32_t rule, uint32_t key_length, uint32_t units, double expires_at_ms);
/* Secret scanning (sluice/secret_scan.hpp), for the gateway's masking; independent of the limiter and
 * usable in an instance that never called sluice_init. sluice_scan_tables_new allocates one set of
 * zeroed tables (sluice::SecretScanTables and its `pair_count` third sets, filled in by the caller; at
 * most 65535) and returns its address, or 0 when memory runs out; sluice_scan_tables_ready derives the
 * scan's first-pass table from them once they are written; sluice_scan_tables_free releases them. sluice_scan_reserve makes the scan area hold
 * `length` bytes and returns its address (0 when memory runs out); the positions area, from
 * sluice_scan_positions(), then holds `length` u32 (and the scan's scratch after them).
 * sluice_scan_tables_add_run adds the scan area's first `length` bytes as a run an occurrence may
 * repeat, `min_bytes` of them at least (sluice::add_secret_scan_run; `escapable` 0 or 1), and returns
 * 0 or a negative status. sluice_scan writes the candidate positions of the
 * scan area's first `length` bytes and returns how many, or a negative status (length over the area). */
uint32_t sluice_scan_tables_new(uint32_t pair_count);
int32_t sluice_scan_tables_add_run(uint32_t tables, uint32_t length, uint32_t min_bytes, uint32_t escapable);
void sluice_scan_tables_ready(uint32_t tables);
void sluice_scan_tables_free(uint32_t tables);
uint32_t sluice_scan_reserve(uint32_t length);
uint32_t sluice_scan_positions(void);
int32_t sluice_scan(uint32_t tables, uint32_t length);
/* The replay's Logpush reader (sluice/logpush_scan.hpp; wasm-bindings/logpush_abi.cpp), exported by
 * sluice-replay.wasm (the CLI's module; sluice.wasm, which Workers bundle, has none of it), independent of
 * the limiter. sluice_logpush_reserve makes the areas hold a batch of `bytes` bytes and `lines` lines
 * (1, or 0 when memory runs out); sluice_logpush_areas() points at seven u32: the addresses of the
 * bytes, the lines' i32 start offsets, their i32 end offsets, the lines' sluice::LogpushSpans (96 bytes
 * each), the sluice::LogpushHeader area (24 bytes each, SLUICE_LOGPUSH_HEADERS_PER_LINE per line
 * reserved) and the sluice::LogpushFresh area (12 bytes each), then how many LogpushFresh the last
 * scan wrote (the strings it put into the module's sluice::LogpushStrings, kept across scans).
 * sluice_logpush_scan reads the first `count` lines and returns how many headers it wrote, or -1
 * (count or an offset beyond the areas). sluice_logpush_abi_version is SLUICE_ABI_VERSION, which the
 * module was built with: its loader (logpush-scan.js) refuses a module of another version, as the
 * limiter's does sluice.wasm (a name of its own: the fuzz target links both modules' sources). */
#define SLUICE_LOGPUSH_HEADERS_PER_LINE 4u
uint32_t sluice_logpush_abi_version(void);
int32_t sluice_logpush_reserve(uint32_t bytes, uint32_t lines);
uint32_t sluice_logpush_areas(void);
int32_t sluice_logpush_scan(uint32_t count);

#ifdef __cplusplus
}
#endif
#endif
