// The exported C ABI of sluice.wasm: a thin translation between the I/O area and sluice::Limiter.
// Every export is listed in sluice_abi.h; nothing here decides anything.
#include "sluice_abi.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "sluice/limiter.hpp"
#include "sluice/secret_scan.hpp"

#define SLUICE_EXPORT(name) extern "C" __attribute__((export_name(#name)))

namespace {

using sluice::Status;

alignas(16) uint8_t g_io[SLUICE_IO_BYTES];
alignas(sluice::Limiter) uint8_t g_limiter_storage[sizeof(sluice::Limiter)];
sluice::Limiter* g_limiter = nullptr;
uint8_t* g_state = nullptr;
uint32_t g_state_bytes = 0;
const char* g_error_field = "";
// The checks and decisions of the current call. Static, not on the stack: their types have default
// member initialisers, and value-initialising 16 of each on every call cost more than deciding.
sluice::Check g_checks[sluice::kMaxChecksPerCall];
sluice::Decision g_decisions[sluice::kMaxChecksPerCall];

// The hash of the key bytes at the start of the key area, as the last sluice_check found them. The
// loader says (SLUICE_CHECK_KEY0_UNCHANGED) when it has not rewritten those bytes since that call, and
// the hash is then reused instead of hashing the same bytes again. The other calls that read the key
// area (reset, export, import) forget it.
struct Key0Hash {
  bool valid = false;
  uint32_t length = 0;
  uint64_t hash = 0;
};
Key0Hash g_key0;

int32_t fail(Status status) { return -static_cast<int32_t>(status); }

// A double that must hold a whole number in [min, max].
bool to_int64(double value, int64_t min, int64_t max, int64_t* out) {
  if (!(value >= static_cast<double>(min) && value <= static_cast<double>(max))) return false;  // NaN too
  if (std::floor(value) != value) return false;
  *out = static_cast<int64_t>(value);
  return true;
}

void put_f64(uint32_t offset, double value) { std::memcpy(g_io + offset, &value, 8); }
uint32_t get_u32(uint32_t offset) {
  uint32_t value;
  std::memcpy(&value, g_io + offset, 4);
  return value;
}

void put_decision(uint32_t offset, const sluice::Decision& d) {
  put_f64(offset, d.allowed ? 1 : 0);
  put_f64(offset + 8, static_cast<double>(d.limit));
  put_f64(offset + 16, static_cast<double>(d.remaining));
  put_f64(offset + 24, static_cast<double>(d.reset_ms));
  put_f64(offset + 32, static_cast<double>(d.retry_after_ms));
}

}  // namespace

SLUICE_EXPORT(sluice_abi_version) uint32_t sluice_abi_version(void) { return SLUICE_ABI_VERSION; }

SLUICE_EXPORT(sluice_init) int32_t sluice_init(uint32_t seed0, uint32_t seed1, uint32_t seed2, uint32_t seed3) {
  if (g_limiter != nullptr) return fail(Status::kInvalidArgument);
  const sluice::SipHashKey seed{(static_cast<uint64_t>(seed1) << 32) | seed0, (static_cast<uint64_t>(seed3) << 32) | seed2};
  g_limiter = new (g_limiter_storage) sluice::Limiter(seed);
  return 0;
}

SLUICE_EXPORT(sluice_io_buffer) uint32_t sluice_io_buffer(void) { return reinterpret_cast<uintptr_t>(g_io); }

SLUICE_EXPORT(sluice_error_field) uint32_t sluice_error_field(void) {
  return reinterpret_cast<uintptr_t>(g_error_field);
}

SLUICE_EXPORT(sluice_add_rule)
int32_t sluice_add_rule(uint32_t algorithm, double limit, double window_ms, double burst, uint32_t key_capacity,
                        double block_ms) {
  if (g_limiter == nullptr) return fail(Status::kInvalidArgument);
  g_error_field = "";
  sluice::RuleConfig config;
  config.count_denied = (algorithm & SLUICE_RULE_COUNT_DENIED) != 0;
  algorithm &= ~SLUICE_RULE_COUNT_DENIED;
  if (algorithm >= static_cast<uint32_t>(sluice::kAlgorithmCount)) {
    g_error_field = "algorithm";
    return fail(Status::kInvalidRule);
  }
  config.algorithm = static_cast<sluice::Algorithm>(algorithm);
  if (!to_int64(limit, 1, sluice::kMaxLimit, &config.limit)) {
    g_error_field = "limit";
    return fail(Status::kInvalidRule);
  }
  if (!to_int64(window_ms, 1, sluice::kMaxWindowMs, &config.window_ms)) {
    g_error_field = "window_ms";
    return fail(Status::kInvalidRule);
  }
  if (!to_int64(burst, 0, sluice::kMaxLimit, &config.burst)) {
    g_error_field = "burst";
    return fail(Status::kInvalidRule);
  }
  if (!to_int64(block_ms, 0, sluice::kMaxWindowMs, &config.block_ms)) {
    g_error_field = "block_ms";
    return fail(Status::kInvalidRule);
  }
  // Size the state area for the largest export of any rule before the rule exists, so that exports
  // never allocate and no rule is added whose state could not be exported. A config the core refuses
  // is refused first, naming its field.
  sluice::Rule validated;
  const Status valid = sluice::make_rule(config, &validated, &g_error_field);
  if (valid != Status::kOk) return fail(valid);
  const uint64_t needed = sluice::Limiter::exported_state_bytes(config.algorithm, config.limit);
  if (needed > UINT32_MAX) return fail(Status::kOutOfMemory);
  const uint32_t had = g_state_bytes;
  if (needed > had) {
    void* grown = std::realloc(g_state, static_cast<size_t>(needed));
    if (grown == nullptr) return fail(Status::kOutOfMemory);
    g_state = static_cast<uint8_t*>(grown);
    g_state_bytes = static_cast<uint32_t>(needed);
  }
  uint32_t id = 0;
  const Status added = g_limiter->add_rule(config, key_capacity, &id, &g_error_field);
  if (added != Status::kOk) {
    // A refused rule leaves no memory behind: shrink the state area back to what the rules need.
    if (g_state_bytes != had) {
      void* shrunk = had == 0 ? nullptr : std::realloc(g_state, had);
      if (had == 0) std::free(g_state);
      if (had == 0 || shrunk != nullptr) {
        g_state = static_cast<uint8_t*>(shrunk);
        g_state_bytes = had;
      }
    }
    return fail(added);
  }
  return static_cast<int32_t>(id);
}

SLUICE_EXPORT(sluice_check) int32_t sluice_check(uint32_t count, double now_ms, uint32_t flags) {
  const bool key0_unchanged = (flags & SLUICE_CHECK_KEY0_UNCHANGED) != 0 && g_key0.valid;
  g_key0.valid = false;
  if (g_limiter == nullptr) return fail(Status::kInvalidArgument);
  if (count > sluice::kMaxChecksPerCall) return fail(Status::kTooManyChecks);
  int64_t now = 0;
  if (!to_int64(now_ms, 0, sluice::kMaxTimeMs, &now)) return fail(Status::kInvalidArgument);
  sluice::Check* const checks = g_checks;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t at = SLUICE_IO_CHECKS_OFFSET + 16 * i;
    const uint32_t key_offset = get_u32(at + 4);
    const uint32_t key_length = get_u32(at + 8);
    if (key_length > sluice::kMaxKeyBytes) return fail(Status::kKeyTooLong);
    if (key_offset > SLUICE_IO_CHECKS_OFFSET || key_length > SLUICE_IO_CHECKS_OFFSET - key_offset) {
      return fail(Status::kInvalidArgument);
    }
    sluice::Check& check = checks[i];
    check.rule = get_u32(at);
    check.key = g_io + key_offset;
    check.key_length = key_length;
    check.cost = static_cast<int64_t>(get_u32(at + 12));
    check.has_hash = key_offset == 0;
    if (check.has_hash) {
      check.hash = key0_unchanged && key_length == g_key0.length ? g_key0.hash : g_limiter->key_hash(check.key, key_length);
      g_key0 = Key0Hash{true, key_length, check.hash};
    }
  }
  sluice::Decision* const decisions = g_decisions;
  sluice::Outcome outcome;
  const Status status = (flags & SLUICE_CHECK_CHARGE) != 0 ? g_limiter->check(checks, count, now, decisions, &outcome)
                                                            : g_limiter->peek(checks, count, now, decisions, &outcome);
  if (status != Status::kOk) return fail(status);
  put_decision(SLUICE_IO_OUTCOME_OFFSET, outcome.decision);
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 40, outcome.deciding_check);
  // A single check's decision is the outcome's: the loader reads it there.
  if (count > 1) {
    for (uint32_t i = 0; i < count; ++i) put_decision(SLUICE_IO_DECISIONS_OFFSET + 40 * i, decisions[i]);
  }
  return 0;
}

// The single check of nearly every request, with its arguments as parameters: no checks area to read,
// no Check or Outcome to fill. The key is at the start of the key area. Returns 1 (admitted), 0
// (denied) or a negative status; the decision goes where sluice_check puts a single check's.
SLUICE_EXPORT(sluice_check_one)
int32_t sluice_check_one(uint32_t rule, uint32_t key_length, uint32_t cost, double now_ms, uint32_t flags) {
  const bool key0_unchanged = (flags & SLUICE_CHECK_KEY0_UNCHANGED) != 0 && g_key0.valid && g_key0.length == key_length;
  g_key0.valid = false;
  if (g_limiter == nullptr) return fail(Status::kInvalidArgument);
  if (key_length > sluice::kMaxKeyBytes) return fail(Status::kKeyTooLong);
  int64_t now = 0;
  if (!to_int64(now_ms, 0, sluice::kMaxTimeMs, &now)) return fail(Status::kInvalidArgument);
  const uint64_t hash = key0_unchanged ? g_key0.hash : g_limiter->key_hash(g_io, key_length);
  g_key0 = Key0Hash{true, key_length, hash};
  sluice::Decision decision;
  const Status status = g_limiter->check_one(rule, hash, static_cast<int64_t>(cost), now,
                                             (flags & SLUICE_CHECK_CHARGE) != 0, &decision);
  if (status != Status::kOk) return fail(status);
  put_decision(SLUICE_IO_OUTCOME_OFFSET, decision);
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 40, 0);
  return decision.allowed ? 1 : 0;
}

SLUICE_EXPORT(sluice_reset) int32_t sluice_reset(uint32_t rule, uint32_t key_length) {
  g_key0.valid = false;
  if (g_limiter == nullptr) return fail(Status::kInvalidArgument);
  const Status status = g_limiter->reset(rule, g_io, key_length);
  return status == Status::kOk ? 0 : fail(status);
}

SLUICE_EXPORT(sluice_state_buffer) uint32_t sluice_state_buffer(void) { return reinterpret_cast<uintptr_t>(g_state); }
SLUICE_EXPORT(sluice_state_buffer_bytes) uint32_t sluice_state_buffer_bytes(void) { return g_state_bytes; }

SLUICE_EXPORT(sluice_export_state) int32_t sluice_export_state(uint32_t rule, uint32_t key_length) {
  g_key0.valid = false;
  if (g_limiter == nullptr) return fail(Status::kInvalidArgument);
  uint32_t written = 0;
  const Status status = g_limiter->export_state(rule, g_io, key_length, g_state, g_state_bytes, &written);
  return status == Status::kOk ? static_cast<int32_t>(written) : fail(status);
}

SLUICE_EXPORT(sluice_import_state) int32_t sluice_import_state(uint32_t rule, uint32_t key_length, uint32_t length) {
  g_key0.valid = false;
  if (g_limiter == nullptr) return fail(Status::kInvalidArgument);
  if (length > g_state_bytes) return fail(Status::kInvalidState);
  const Status status = g_limiter->import_state(rule, g_io, key_length, g_state, length);
  return status == Status::kOk ? 0 : fail(status);
}

SLUICE_EXPORT(sluice_stats) int32_t sluice_stats(uint32_t rule) {
  if (g_limiter == nullptr) return fail(Status::kInvalidArgument);
  sluice::TableStats stats;
  const Status status = g_limiter->stats(rule, &stats);
  if (status != Status::kOk) return fail(status);
  put_f64(SLUICE_IO_OUTCOME_OFFSET, stats.keys);
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 8, stats.slots);
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 16, static_cast<double>(stats.memory_bytes));
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 24, static_cast<double>(stats.evictions));
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 32, static_cast<double>(stats.evictions_restricting));
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 40, static_cast<double>(stats.summary_starts));
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 48, static_cast<double>(stats.summary_bytes));
  return 0;
}

#ifdef SLUICE_FUZZ_HOOKS
// For the native fuzz target only (fuzz/), never in the wasm module: real pointers to the I/O and state
// areas (the exports return 32-bit offsets, which only mean something in wasm's linear memory), and a
// teardown so that every fuzz input starts from a fresh limiter.
extern "C" uint8_t* sluice_fuzz_io(void) { return g_io; }
extern "C" uint8_t* sluice_fuzz_state(void) { return g_state; }
extern "C" void sluice_fuzz_teardown(void) {
  if (g_limiter != nullptr) g_limiter->~Limiter();
  g_limiter = nullptr;
  std::free(g_state);
  g_state = nullptr;
  g_state_bytes = 0;
  g_key0 = Key0Hash{};
  g_error_field = "";
}
#endif
SLUICE_EXPORT(sluice_concurrency)
int32_t sluice_concurrency(uint32_t rule, uint32_t key_length, uint32_t op, uint32_t holder, uint32_t cost, double now_ms) {
  g_key0.valid = false;
  if (g_limiter == nullptr) return fail(Status::kInvalidArgument);
  if (key_length > sluice::kMaxKeyBytes) return fail(Status::kKeyTooLong);
  int64_t now = 0;
  if (!to_int64(now_ms, 0, sluice::kMaxTimeMs, &now)) return fail(Status::kInvalidArgument);
  sluice::Decision decision;
  const Status status = g_limiter->concurrency(rule, g_limiter->key_hash(g_io, key_length),
                                               static_cast<sluice::concurrency::Op>(op), holder,
                                               static_cast<int64_t>(cost), now, &decision);
  if (status != Status::kOk) return fail(status);
  put_decision(SLUICE_IO_OUTCOME_OFFSET, decision);
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 40, 0);
  return decision.allowed ? 1 : 0;
}

SLUICE_EXPORT(sluice_lend)
int32_t sluice_lend(uint32_t rule, uint32_t key_length, uint32_t wanted, double lease_ms, double now_ms, double ahead_ms) {
  g_key0.valid = false;
  if (g_limiter == nullptr) return fail(Status::kInvalidArgument);
  if (key_length > sluice::kMaxKeyBytes) return fail(Status::kKeyTooLong);
  int64_t now = 0;
  int64_t lease = 0;
  int64_t ahead = 0;
  if (!to_int64(now_ms, 0, sluice::kMaxTimeMs, &now) || !to_int64(lease_ms, 1, sluice::kMaxWindowMs, &lease) ||
      !to_int64(ahead_ms, 0, sluice::kMaxWindowMs, &ahead)) {
    return fail(Status::kInvalidArgument);
  }
  sluice::Lease lent;
  const Status status = g_limiter->lend(rule, g_limiter->key_hash(g_io, key_length), static_cast<int64_t>(wanted), lease, now, &lent, ahead);
  if (status != Status::kOk) return fail(status);
  put_f64(SLUICE_IO_OUTCOME_OFFSET, static_cast<double>(lent.units));
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 8, static_cast<double>(lent.expires_at_ms));
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 16, static_cast<double>(lent.remaining));
  put_f64(SLUICE_IO_OUTCOME_OFFSET + 24, static_cast<double>(lent.starts_at_ms));
  return static_cast<int32_t>(lent.units);
}

SLUICE_EXPORT(sluice_give_back)
int32_t sluice_give_back(uint32_t rule, uint32_t key_length, uint32_t units, double expires_at_ms) {
  g_key0.valid = false;
  if (g_limiter == nullptr) return fail(Status::kInvalidArgument);
  if (key_length > sluice::kMaxKeyBytes) return fail(Status::kKeyTooLong);
  int64_t expires = 0;
  if (!to_int64(expires_at_ms, 1, sluice::kMaxTimeMs + sluice::kMaxWindowMs, &expires)) return fail(Status::kInvalidArgument);
  int64_t returned = 0;
  const Status status = g_limiter->give_back(rule, g_limiter->key_hash(g_io, key_length), static_cast<int64_t>(units), expires, &returned);
  return status == Status::kOk ? static_cast<int32_t>(returned) : fail(status);
}

namespace {
// The scan area and its positions, grown to the longest text scanned so far (a masked body's chunk
// with the bytes held back from the one before).
uint8_t* g_scan_text = nullptr;
uint32_t* g_scan_positions = nullptr;
uint32_t g_scan_capacity = 0;
}  // namespace

namespace {
// The scan's exports below on real pointers; the exports return them as 32-bit offsets (wasm's linear
// memory), the native fuzz target (SLUICE_FUZZ_HOOKS) calls these directly.
sluice::SecretScanTables* scan_tables_new(uint32_t pair_count) {
  if (pair_count > 65535) return nullptr;
  auto* tables = static_cast<sluice::SecretScanTables*>(std::calloc(1, sluice::secret_scan_tables_bytes(pair_count)));
  if (tables == nullptr) return nullptr;
  tables->pair_count = pair_count;
  return tables;
}

uint8_t* scan_reserve(uint32_t length) {
  if (length <= g_scan_capacity) return g_scan_text;
  std::free(g_scan_text);
  std::free(g_scan_positions);
  g_scan_text = static_cast<uint8_t*>(std::malloc(length));
  g_scan_positions = static_cast<uint32_t*>(std::malloc(static_cast<size_t>(sluice::secret_scan_positions_words(length)) * sizeof(uint32_t)));
  if (g_scan_text == nullptr || g_scan_positions == nullptr) {
    std::free(g_scan_text);
    std::free(g_scan_positions);
    g_scan_text = nullptr;
    g_scan_positions = nullptr;
    g_scan_capacity = 0;
    return nullptr;
  }
  g_scan_capacity = length;
  return g_scan_text;
}

int32_t scan_tables_add_run(sluice::SecretScanTables* tables, uint32_t length, uint32_t min_bytes, uint32_t escapable) {
  if (tables == nullptr || length > g_scan_capacity || min_bytes == 0 || min_bytes > length) return fail(Status::kInvalidArgument);
  sluice::add_secret_scan_run(*tables, g_scan_text, length, min_bytes, escapable != 0);
  return 0;
}

int32_t scan(const sluice::SecretScanTables* tables, uint32_t length) {
  if (tables == nullptr || length > g_scan_capacity) return fail(Status::kInvalidArgument);
  return static_cast<int32_t>(sluice::scan_secret_candidates(*tables, g_scan_text, length, g_scan_positions));
}

template <typename T>
T* from_offset(uint32_t offset) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(offset));
}
}  // namespace

SLUICE_EXPORT(sluice_scan_tables_new) uint32_t sluice_scan_tables_new(uint32_t pair_count) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(scan_tables_new(pair_count)));
}

SLUICE_EXPORT(sluice_scan_tables_ready) void sluice_scan_tables_ready(uint32_t tables) {
  if (tables != 0) sluice::prepare_secret_scan(*from_offset<sluice::SecretScanTables>(tables));
}

SLUICE_EXPORT(sluice_scan_tables_add_run) int32_t sluice_scan_tables_add_run(uint32_t tables, uint32_t length, uint32_t min_bytes, uint32_t escapable) {
  return scan_tables_add_run(from_offset<sluice::SecretScanTables>(tables), length, min_bytes, escapable);
}

SLUICE_EXPORT(sluice_scan_tables_free) void sluice_scan_tables_free(uint32_t tables) { std::free(from_offset<void>(tables)); }

SLUICE_EXPORT(sluice_scan_reserve) uint32_t sluice_scan_reserve(uint32_t length) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(scan_reserve(length)));
}

SLUICE_EXPORT(sluice_scan_positions) uint32_t sluice_scan_positions(void) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(g_scan_positions));
}

SLUICE_EXPORT(sluice_scan) int32_t sluice_scan(uint32_t tables, uint32_t length) {
  return scan(from_offset<const sluice::SecretScanTables>(tables), length);
}

#ifdef SLUICE_FUZZ_HOOKS
// The scan's exports on real pointers, for the native fuzz target (fuzz/): the same code the exports run.
extern "C" sluice::SecretScanTables* sluice_fuzz_scan_tables_new(uint32_t pair_count) { return scan_tables_new(pair_count); }
extern "C" uint8_t* sluice_fuzz_scan_reserve(uint32_t length) { return scan_reserve(length); }
extern "C" uint32_t* sluice_fuzz_scan_positions(void) { return g_scan_positions; }
extern "C" int32_t sluice_fuzz_scan(const sluice::SecretScanTables* tables, uint32_t length) { return scan(tables, length); }
extern "C" int32_t sluice_fuzz_scan_tables_add_run(sluice::SecretScanTables* tables, uint32_t length, uint32_t min_bytes, uint32_t escapable) {
  return scan_tables_add_run(tables, length, min_bytes, escapable);
}
#endif
