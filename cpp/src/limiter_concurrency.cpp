// The Limiter's concurrency calls: acquire, release and renew for a named holder, and the rule's state
// bytes. Apart from limiter.cpp because the concurrency rule has operations the rate rules do not.
#include <cstring>

#include "algorithm_dispatch.hpp"
#include "sluice/limiter.hpp"

namespace sluice {
namespace {

void put64(uint8_t* p, int64_t v) { std::memcpy(p, &v, 8); }
int64_t get64(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

Status Limiter::concurrency(uint32_t rule_id, uint64_t h, concurrency::Op op, uint32_t holder, int64_t cost,
                            int64_t now_ms, Decision* out) {
  if (rule_id >= rule_count_) return Status::kUnknownRule;
  if (out == nullptr || static_cast<uint32_t>(op) >= concurrency::kOpCount) return Status::kInvalidArgument;
  if (now_ms < 0 || now_ms > kMaxTimeMs) return Status::kInvalidArgument;
  RuleTable& rt = rules_[rule_id];
  if (rt.rule.algorithm != Algorithm::kConcurrency) return Status::kInvalidArgument;
  uint32_t slot = rt.table.find(h);
  if (op == concurrency::Op::kAcquire) {
    if (cost < 1 || cost > kMaxCost) return Status::kInvalidCost;
    // A key not in the table starts from the eviction summary (units evicted keys still held).
    const Start start = slot == KeyTable::kMissing ? start_of(rt, h, now_ms, true) : Start{};
    if (slot != KeyTable::kMissing) {
      *out = concurrency::decide(rt.rule, rt.table.state(slot), rt.table.ring(slot), now_ms, cost);
    } else {
      *out = concurrency::decide(rt.rule, start.state, start.ring, now_ms, cost);
    }
    if (!out->allowed) return Status::kOk;
    if (slot == KeyTable::kMissing) {
      // Only admitted acquisitions take a slot; the least used key gives its slot up when the table is
      // full, so a key holding leases is the last to go (and what it held is folded into the summary).
      slot = choose_slot(rt, h, now_ms, nullptr, 0);
      if (slot == KeyTable::kMissing) return Status::kOutOfMemory;
      place_key(rt, slot, h, start, now_ms);
    }
    concurrency::acquire(rt.rule, rt.table.state(slot), rt.table.ring(slot), now_ms, holder, cost);
    return Status::kOk;
  }
  if (slot == KeyTable::kMissing) {
    // Nobody holds anything on a key the table does not know: nothing to free or renew.
    *out = concurrency::decide(rt.rule, KeyState{}, SlidingLogRing{}, now_ms, 0);
    out->allowed = false;
    return Status::kOk;
  }
  KeyState& state = rt.table.state(slot);
  const SlidingLogRing ring = rt.table.ring(slot);
  const bool found = op == concurrency::Op::kRelease ? concurrency::release(rt.rule, state, ring, now_ms, holder)
                                                      : concurrency::renew(rt.rule, state, ring, now_ms, holder);
  *out = concurrency::decide(rt.rule, state, ring, now_ms, 0);
  out->allowed = found;
  return Status::kOk;
}

// State bytes of a concurrency rule: the common 8-byte header, then i64 a = the latest time any
// operation was taken at, i64 b = n, and n entries { i64 time, i64 holder }, oldest first: the leases
// still live at that latest time.
Status Limiter::export_concurrency(RuleTable& rt, uint32_t slot, uint8_t* out, uint32_t out_capacity,
                                   uint32_t* written) {
  const KeyState& state = rt.table.state(slot);
  const SlidingLogRing ring = rt.table.ring(slot);
  const uint32_t first = concurrency::live_from(rt.rule, state, ring);
  const uint32_t n = concurrency::count(state) - first;
  *written = kStateHeaderBytes + 16 * n;
  if (out == nullptr || out_capacity < *written) return Status::kBufferTooSmall;
  out[0] = 1;  // kStateFormat
  out[1] = static_cast<uint8_t>(rt.rule.algorithm);
  out[2] = 0;
  out[3] = 0;
  std::memcpy(out + 4, &rt.signature, 4);
  put64(out + 8, concurrency::latest(state));
  put64(out + 16, n);
  for (uint32_t i = 0; i < n; ++i) {
    put64(out + kStateHeaderBytes + 16 * i, concurrency::entry_time(state, ring, first + i));
    put64(out + kStateHeaderBytes + 16 * i + 8, concurrency::entry_holder(ring, first + i));
  }
  return Status::kOk;
}

Status Limiter::import_concurrency(RuleTable& rt, uint64_t h, const uint8_t* bytes, uint32_t length) {
  const int64_t latest = get64(bytes + 8);
  const int64_t n = get64(bytes + 16);
  if (latest < 0 || latest > kMaxTimeMs || n < 0 || n > rt.rule.limit) return Status::kInvalidState;
  if (length != kStateHeaderBytes + 16 * static_cast<uint64_t>(n)) return Status::kInvalidState;
  int64_t previous = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = get64(bytes + kStateHeaderBytes + 16 * i);
    const int64_t holder = get64(bytes + kStateHeaderBytes + 16 * i + 8);
    // Oldest first, each still live at `latest`, holders 32-bit.
    if (t < previous || t > latest || latest - t >= rt.rule.window_ms || holder < 0 || holder > 0xffffffff) {
      return Status::kInvalidState;
    }
    previous = t;
  }
  uint32_t slot = rt.table.find(h);
  if (slot == KeyTable::kMissing) {
    // Imported state replaces whatever the key had, the summary's start included.
    slot = choose_slot(rt, h, latest, nullptr, 0);
    if (slot == KeyTable::kMissing) return Status::kOutOfMemory;
    place_key(rt, slot, h, Start{}, latest);
  }
  KeyState& state = rt.table.state(slot);
  const SlidingLogRing ring = rt.table.ring(slot);
  const auto count = static_cast<uint32_t>(n);
  concurrency::restore_begin(state, latest, count > 0 ? get64(bytes + kStateHeaderBytes) : latest, count);
  for (uint32_t i = 0; i < count; ++i) {
    concurrency::restore_entry(state, ring, i, get64(bytes + kStateHeaderBytes + 16 * i),
                               static_cast<uint32_t>(get64(bytes + kStateHeaderBytes + 16 * i + 8)));
  }
  return Status::kOk;
}

}  // namespace sluice
