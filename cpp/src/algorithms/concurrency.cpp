#include "sluice/algorithms/concurrency.hpp"

#include <cstddef>

#include "sluice/arithmetic.hpp"

namespace sluice::concurrency {
namespace {

// Offsets are rebased before they could pass this, well inside 32 bits.
constexpr int64_t kRebaseAfterMs = int64_t{1} << 31;

uint32_t count_of(const KeyState& state) { return static_cast<uint32_t>(state.b & 0xffffffff); }
uint32_t latest_offset(const KeyState& state) { return static_cast<uint32_t>(static_cast<uint64_t>(state.b) >> 32); }
void set_b(KeyState& state, uint32_t count, uint32_t latest) {
  state.b = static_cast<int64_t>((static_cast<uint64_t>(latest) << 32) | count);
}
uint32_t& holder_at(SlidingLogRing ring, uint32_t index) { return ring.entries[2 * static_cast<std::size_t>(index)]; }
uint32_t& offset_at(SlidingLogRing ring, uint32_t index) { return ring.entries[2 * static_cast<std::size_t>(index) + 1]; }
int64_t time_at(const KeyState& state, SlidingLogRing ring, uint32_t index) { return state.a + offset_at(ring, index); }

// The time the key is judged at: the caller's now, or the latest time an operation was taken at if
// time ran backwards, so an old `now` can neither bring back an expired lease nor shorten a live one.
// A fresh state (all zeros) has latest time 0: any now.
int64_t effective_now(const KeyState& state, int64_t now) { return detail::max64(now, state.a + latest_offset(state)); }

// How many of the oldest entries have expired at `at` (acquired or renewed at t <= at - lease).
uint32_t expired(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t at) {
  const uint32_t n = count_of(state);
  uint32_t gone = 0;
  while (gone < n && time_at(state, ring, gone) <= at - rule.window_ms) ++gone;
  return gone;
}

// Drops the expired prefix, rebases the offsets if `at` is far from the base, and records `at` as the
// latest time: every operation that changes the state starts here.
void advance(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t at) {
  const uint32_t gone = expired(rule, state, ring, at);
  uint32_t n = count_of(state);
  if (gone > 0) {
    for (uint32_t i = gone; i < n; ++i) {
      holder_at(ring, i - gone) = holder_at(ring, i);
      offset_at(ring, i - gone) = offset_at(ring, i);
    }
    n -= gone;
  }
  if (n == 0) {
    state.a = at;
  } else if (at - state.a >= kRebaseAfterMs) {
    // Every live entry is younger than the lease (<= 2^31), so rebasing on the oldest keeps offsets small.
    const int64_t base = time_at(state, ring, 0);
    for (uint32_t i = 0; i < n; ++i) offset_at(ring, i) = static_cast<uint32_t>(time_at(state, ring, i) - base);
    state.a = base;
  }
  set_b(state, n, static_cast<uint32_t>(at - state.a));
}

}  // namespace

Decision decide(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost) {
  const int64_t at = effective_now(state, now);
  const uint32_t n = count_of(state);
  const uint32_t gone = expired(rule, state, ring, at);
  const int64_t live = n - gone;
  Decision d;
  d.limit = rule.limit;
  d.allowed = live + cost <= rule.limit;
  d.remaining = rule.limit - (d.allowed ? live + cost : live);
  // Free again once the newest lease runs out, if nobody renews or releases; an acquisition now would be the newest.
  if (d.allowed && cost > 0) {
    d.reset_ms = at + rule.window_ms - now;
  } else if (live > 0) {
    d.reset_ms = time_at(state, ring, n - 1) + rule.window_ms - now;
  } else {
    d.reset_ms = 0;
  }
  if (d.allowed) {
    d.retry_after_ms = 0;
  } else if (cost > rule.limit) {
    d.retry_after_ms = kNever;
  } else {
    // The request fits once the oldest (live + cost - limit) leases have run out.
    const auto must_leave = static_cast<uint32_t>(live + cost - rule.limit);
    d.retry_after_ms = time_at(state, ring, gone + must_leave - 1) + rule.window_ms - now;
  }
  return d;
}

void acquire(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, uint32_t holder, int64_t cost) {
  const int64_t at = effective_now(state, now);
  advance(rule, state, ring, at);
  uint32_t n = count_of(state);
  const auto offset = static_cast<uint32_t>(at - state.a);
  for (int64_t i = 0; i < cost; ++i, ++n) {
    holder_at(ring, n) = holder;
    offset_at(ring, n) = offset;
  }
  set_b(state, n, offset);
}

bool release(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, uint32_t holder) {
  const int64_t at = effective_now(state, now);
  advance(rule, state, ring, at);
  const uint32_t n = count_of(state);
  uint32_t kept = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (holder_at(ring, i) == holder) continue;
    holder_at(ring, kept) = holder_at(ring, i);
    offset_at(ring, kept) = offset_at(ring, i);
    ++kept;
  }
  set_b(state, kept, latest_offset(state));
  return kept != n;
}

bool renew(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, uint32_t holder) {
  const int64_t at = effective_now(state, now);
  advance(rule, state, ring, at);
  const uint32_t n = count_of(state);
  // Keep the others in order and move the holder's units to the end, renewed at `at` (the newest time):
  // the entries stay sorted, so the expired ones stay a prefix.
  uint32_t kept = 0;
  uint32_t renewed = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (holder_at(ring, i) == holder) {
      ++renewed;
      continue;
    }
    holder_at(ring, kept) = holder_at(ring, i);
    offset_at(ring, kept) = offset_at(ring, i);
    ++kept;
  }
  const auto offset = static_cast<uint32_t>(at - state.a);
  for (uint32_t i = kept; i < n; ++i) {
    holder_at(ring, i) = holder;
    offset_at(ring, i) = offset;
  }
  return renewed > 0;
}

double usage(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now) {
  const int64_t at = effective_now(state, now);
  const uint32_t live = count_of(state) - expired(rule, state, ring, at);
  return static_cast<double>(live) / static_cast<double>(rule.limit);
}

int64_t latest(const KeyState& state) { return state.a + latest_offset(state); }
uint32_t live_from(const Rule& rule, const KeyState& state, SlidingLogRing ring) {
  return expired(rule, state, ring, latest(state));
}
uint32_t count(const KeyState& state) { return count_of(state); }
int64_t entry_time(const KeyState& state, SlidingLogRing ring, uint32_t index) { return time_at(state, ring, index); }
uint32_t entry_holder(SlidingLogRing ring, uint32_t index) { return holder_at(ring, index); }

void restore_begin(KeyState& state, int64_t latest_ms, int64_t first_time, uint32_t n) {
  state.a = n > 0 ? first_time : latest_ms;
  set_b(state, n, static_cast<uint32_t>(latest_ms - state.a));
}

void restore_entry(const KeyState& state, SlidingLogRing ring, uint32_t index, int64_t time, uint32_t holder) {
  holder_at(ring, index) = holder;
  offset_at(ring, index) = static_cast<uint32_t>(time - state.a);
}

}  // namespace sluice::concurrency
