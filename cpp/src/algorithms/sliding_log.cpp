#include "sluice/algorithms/sliding_log.hpp"

#include "sluice/arithmetic.hpp"
#include "sluice/lease.hpp"

namespace sluice::sliding_log {
namespace {

// Offsets are rebased before they could reach this: every offset stays below 2^31, which leaves the
// top bit of an entry free to mark the units a lease lent (kLentMark).
constexpr int64_t kRebaseAfterMs = kMaxSpanMs;
constexpr uint32_t kOffsetBits = kLentMark - 1;

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
uint32_t& entry_at(const Rule& rule, const KeyState& state, SlidingLogRing ring, uint32_t index) {
  return ring.entries[slot(rule, head_of(state), index)];
}
int64_t time_at(const Rule& rule, const KeyState& state, SlidingLogRing ring, uint32_t index) {
  return state.a + (entry_at(rule, state, ring, index) & kOffsetBits);
}
bool lent_at(const Rule& rule, const KeyState& state, SlidingLogRing ring, uint32_t index) {
  return (entry_at(rule, state, ring, index) & kLentMark) != 0;
}

// The newest entry admitted directly (not lent), if any: the latest time the key was ever judged at.
// Lent entries sit at their lease's end, in the future, and do not move the key's clock.
bool newest_direct(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t* time) {
  for (uint32_t i = count_of(state); i > 0; --i) {
    if (!lent_at(rule, state, ring, i - 1)) {
      *time = time_at(rule, state, ring, i - 1);
      return true;
    }
  }
  return false;
}

// The time the key is judged at: the caller's now, or its newest direct entry if time ran backwards,
// so an old `now` can neither re-admit nor re-order entries.
int64_t effective_now(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now) {
  int64_t newest = 0;
  return newest_direct(rule, state, ring, &newest) ? detail::max64(now, newest) : now;
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

// Makes the base fit `t`: afterwards t - state.a and every entry's offset are in [0, 2^31). Rebases on
// the older of the oldest entry and `t` when needed; false (nothing changed) when even that does not fit.
bool fit(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t t) {
  const uint32_t count = count_of(state);
  if (count == 0) {
    state.a = t;
    set_ring(state, 0, 0);
    return true;
  }
  const int64_t oldest = time_at(rule, state, ring, 0);
  const int64_t newest = time_at(rule, state, ring, count - 1);
  if (t >= state.a && t - state.a < kRebaseAfterMs) return true;
  const int64_t base = detail::min64(oldest, t);
  if (detail::max64(newest, t) - base >= kRebaseAfterMs) return false;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t& entry = entry_at(rule, state, ring, i);
    entry = (entry & kLentMark) | static_cast<uint32_t>(state.a + (entry & kOffsetBits) - base);
  }
  state.a = base;
  return true;
}

// Records `n` entries at time `t` (which fit() accepted) after every entry at or before `t`, so the
// ring stays sorted by time: only entries later than `t` move, and those are lent ones (a direct
// charge is at or after the newest direct entry, a lease's end after it too).
void insert(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t t, int64_t n, bool lent) {
  const uint32_t count = count_of(state);
  uint32_t at = count;
  while (at > 0 && time_at(rule, state, ring, at - 1) > t) --at;
  const auto added = static_cast<uint32_t>(n);
  for (uint32_t i = count; i > at; --i) entry_at(rule, state, ring, i - 1 + added) = entry_at(rule, state, ring, i - 1);
  const uint32_t value = static_cast<uint32_t>(t - state.a) | (lent ? kLentMark : 0);
  for (uint32_t i = 0; i < added; ++i) entry_at(rule, state, ring, at + i) = value;
  set_ring(state, head_of(state), count + added);
}

}  // namespace

Decision decide(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost) {
  const int64_t at = effective_now(rule, state, ring, now);
  // Entries that have left the window are skipped here, and dropped only by a charge: a look at a later
  // time (a peek, a denied call) must not forget entries that a later request at an earlier `now` still
  // counts. After a charge the newest direct entry is the latest time ever charged, which keeps that true.
  // Lent entries later than `at` are live: they stand for units an isolate may use until their lease ends.
  const uint32_t gone = expired(rule, state, ring, at);
  const int64_t live = count_of(state) - gone;
  Decision d;
  d.limit = rule.limit;
  d.allowed = live + cost <= rule.limit;
  const int64_t used = d.allowed ? live + cost : live;
  d.remaining = rule.limit - used;
  // Full again once the newest entry leaves the window; a charge now would be the newest, unless a
  // lease ends later.
  const int64_t newest = live > 0 ? time_at(rule, state, ring, count_of(state) - 1) : at;
  if (d.allowed && cost > 0) {
    d.reset_ms = detail::max64(at, newest) + rule.window_ms - now;
  } else if (live > 0) {
    d.reset_ms = newest + rule.window_ms - now;
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
  // This always fits: every entry left is later than at - window_ms, and lent ones (the only ones that
  // can be later than `at`) were fitted when lent on a base at or before the newest direct entry,
  // which `at` is not before (a key holds lent entries only with a direct one: lend, import_state).
  fit(rule, state, ring, at);
  insert(rule, state, ring, at, cost, false);
}

int64_t lend(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t wanted, int64_t lease_ms, int64_t now,
             int64_t* expires_at_ms) {
  // Only a key with a direct entry lends (an isolate's first request goes to the object anyway): that
  // entry is the key's clock, which keeps every later direct entry at or after it, so a direct charge
  // always fits the ring's offsets (fit) and never goes before a lent entry it should follow.
  // Nor when time ran backwards (now before that entry), as the windows do: so a lease always starts
  // at `now`, and its end is at most a quarter window past the core's clock (eviction_summary.cpp
  // counts on that).
  int64_t newest = 0;
  if (!newest_direct(rule, state, ring, &newest) || now < newest) return 0;
  const int64_t start = now;
  // Entries are dropped only at the newest direct entry's time, never at a lease's start: a later
  // request at an earlier `now` (but not before that entry) may still count them.
  drop_expired(rule, state, ring, newest);
  // A lent unit is counted until its lease's end plus a window: the lease is capped at a quarter
  // window, so that what a lease holds back beyond a direct admission is at most a quarter window.
  lease_ms = detail::min64(lease_ms, rule.window_ms / kLogLeaseShareOfWindow);
  if (lease_ms < 1) return 0;
  // Entries not yet dropped take room in the ring: lend from what the ring has free.
  const int64_t units = detail::min64(wanted, (rule.limit - count_of(state)) / kLendShare);
  if (units < 1) return 0;
  const int64_t end = start + lease_ms;
  if (!fit(rule, state, ring, end)) return 0;
  insert(rule, state, ring, end, units, true);
  *expires_at_ms = end;
  return units;
}

int64_t give_back(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t units, int64_t expires_at_ms) {
  const uint32_t count = count_of(state);
  uint32_t kept = 0;
  int64_t returned = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const bool take = returned < units && lent_at(rule, state, ring, i) && time_at(rule, state, ring, i) == expires_at_ms;
    if (take) {
      ++returned;
      continue;
    }
    if (kept != i) entry_at(rule, state, ring, kept) = entry_at(rule, state, ring, i);
    ++kept;
  }
  set_ring(state, head_of(state), kept);
  return returned;
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
  // All at the newest entry's time, a lease's end included: none leaves the window earlier than it would.
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

bool entry_lent(const Rule& rule, const KeyState& state, SlidingLogRing ring, uint32_t index) {
  return lent_at(rule, state, ring, index);
}

}  // namespace sluice::sliding_log
