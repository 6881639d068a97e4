#include "sluice/algorithms/sliding_log.hpp"

#include "sluice/arithmetic.hpp"

namespace sluice::sliding_log {
namespace {

// Offsets are rebased before they could pass this, well inside 32 bits.
constexpr int64_t kRebaseAfterMs = int64_t{1} << 31;

uint32_t head_of(const KeyState& state) { return static_cast<uint32_t>(state.b & 0xffffffff); }
uint32_t count_of(const KeyState& state) {
  return static_cast<uint32_t>(static_cast<uint64_t>(state.b) >> 32);
}
void set_ring(KeyState& state, uint32_t head, uint32_t count) {
  state.b = static_cast<int64_t>((static_cast<uint64_t>(count) << 32) | head);
}
uint32_t slot(const Rule& rule, uint32_t head, uint32_t index) {
  return static_cast<uint32_t>((static_cast<uint64_t>(head) + index) % static_cast<uint64_t>(rule.limit));
}
int64_t time_at(const Rule& rule, const KeyState& state, SlidingLogRing ring, uint32_t index) {
  return state.a + ring.entries[slot(rule, head_of(state), index)];
}

// The time the key is judged at: the caller's now, or its newest entry if time ran backwards, so
// an old `now` can neither re-admit nor re-order entries.
int64_t effective_now(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now) {
  const uint32_t count = count_of(state);
  if (count == 0) return now;
  return detail::max64(now, time_at(rule, state, ring, count - 1));
}

// How many of the oldest entries have left the window (t <= at - window_ms).
uint32_t expired(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t at) {
  const uint32_t count = count_of(state);
  uint32_t gone = 0;
  while (gone < count && time_at(rule, state, ring, gone) <= at - rule.window_ms) ++gone;
  return gone;
}

void drop_expired(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t at) {
  const uint32_t gone = expired(rule, state, ring, at);
  if (gone == 0) return;
  set_ring(state, slot(rule, head_of(state), gone), count_of(state) - gone);
}

}  // namespace

Decision decide(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost) {
  const int64_t at = effective_now(rule, state, ring, now);
  // Entries that have left the window are skipped here, and dropped only by a charge: a look at a later
  // time (a peek, a denied call) must not forget entries that a later request at an earlier `now` still
  // counts. After a charge the newest entry is the latest time ever charged, which keeps that true.
  const uint32_t gone = expired(rule, state, ring, at);
  const int64_t live = count_of(state) - gone;
  Decision d;
  d.limit = rule.limit;
  d.allowed = live + cost <= rule.limit;
  const int64_t used = d.allowed ? live + cost : live;
  d.remaining = rule.limit - used;
  // Full again once the newest entry leaves the window; a charge now would be the newest.
  if (d.allowed && cost > 0) {
    d.reset_ms = at + rule.window_ms - now;
  } else if (live > 0) {
    d.reset_ms = time_at(rule, state, ring, count_of(state) - 1) + rule.window_ms - now;
  } else {
    d.reset_ms = 0;
  }
  if (d.allowed) {
    d.retry_after_ms = 0;
  } else if (cost > rule.limit) {
    d.retry_after_ms = kNever;
  } else {
    // The request fits once the oldest (live + cost - limit) entries have left the window.
    const auto must_leave = static_cast<uint32_t>(live + cost - rule.limit);
    d.retry_after_ms = time_at(rule, state, ring, gone + must_leave - 1) + rule.window_ms - now;
  }
  return d;
}

void charge(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost) {
  const int64_t at = effective_now(rule, state, ring, now);
  drop_expired(rule, state, ring, at);
  uint32_t count = count_of(state);
  uint32_t head = head_of(state);
  if (count == 0) {
    state.a = at;
    head = 0;
  } else if (at - state.a >= kRebaseAfterMs) {
    // Every live entry is younger than window_ms <= 2^31, so rebasing on the oldest keeps offsets small.
    const int64_t base = time_at(rule, state, ring, 0);
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t& entry = ring.entries[slot(rule, head, i)];
      entry = static_cast<uint32_t>(state.a + entry - base);
    }
    state.a = base;
  }
  const auto offset = static_cast<uint32_t>(at - state.a);
  for (int64_t i = 0; i < cost; ++i) ring.entries[slot(rule, head, count++)] = offset;
  set_ring(state, head, count);
}

double usage(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now) {
  const int64_t at = effective_now(rule, state, ring, now);
  const uint32_t live = count_of(state) - expired(rule, state, ring, at);
  return static_cast<double>(live) / static_cast<double>(rule.limit);
}

KeyState summarize(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now) {
  const int64_t at = effective_now(rule, state, ring, now);
  const uint32_t live = count_of(state) - expired(rule, state, ring, at);
  if (live == 0) return KeyState{};
  return KeyState{time_at(rule, state, ring, count_of(state) - 1), static_cast<int64_t>(live)};
}

KeyState from_summary(const KeyState& summarized) {
  KeyState state;
  state.a = summarized.a;
  set_ring(state, 0, static_cast<uint32_t>(summarized.b));
  return state;
}

void zero_entries(SlidingLogRing ring, const KeyState& summarized) {
  for (int64_t i = 0; i < summarized.b; ++i) ring.entries[i] = 0;
}

uint32_t count(const KeyState& state) { return count_of(state); }

int64_t entry_time(const Rule& rule, const KeyState& state, SlidingLogRing ring, uint32_t index) {
  return time_at(rule, state, ring, index);
}

}  // namespace sluice::sliding_log
