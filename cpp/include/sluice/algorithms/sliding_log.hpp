#pragma once
#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// Sliding-window log: the exact algorithm. It remembers the time of every admitted unit of cost in the
// last window_ms (a ring of `limit` entries) and admits while fewer than `limit` are inside the window.
// State: a = base time (ms) the ring's 32-bit offsets count from; b = ring head (low 32) | count (high 32).
// Memory per key: 4 bytes per unit of limit, on top of the key table's slot.
//
// Leases (lease.hpp): units lent are entries at the lease's end, marked as lent (kLentMark). The ring
// stays sorted by time, lent entries included; the key's clock (the time-ran-backwards guard) is its
// newest direct entry only, so a lease's end in the future never makes older entries leave early.
namespace sluice::sliding_log {

// Every entry's offset from the base, and so the span of a key's entries, stays below this.
inline constexpr int64_t kMaxSpanMs = int64_t{1} << 31;
// The top bit of an entry (above every offset) marks a unit lent to an isolate.
inline constexpr uint32_t kLentMark = uint32_t{1} << 31;

// decide reports what a request of `cost` at `now` would get, without changing `state`. A cost of 0
// describes the key as it stands (used for peeks and for decisions of calls denied by another rule).
Decision decide(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost);

// charge records an admitted request of `cost` at `now`. Call it only after decide admitted it.
void charge(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost);

// lend records up to `wanted` units lent at `now` for at most `lease_ms` (capped at a quarter window)
// as entries at the lease's end, *expires_at_ms, and returns how many. Nothing is lent (0) near the
// limit, by a key with no direct entry yet, or when `now` is before its newest direct entry.
int64_t lend(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t wanted, int64_t lease_ms, int64_t now,
             int64_t* expires_at_ms);

// give_back removes up to `units` lent entries whose lease ended at `expires_at_ms` (leases with the
// same end are interchangeable) and returns how many it removed.
int64_t give_back(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t units, int64_t expires_at_ms);

// usage is the share of the quota in use at `now`, from 0 to 1.
double usage(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now);

// summarize describes the entries live at `now` in the eviction summary's form (eviction_summary.hpp):
// a = the newest one's time, b = how many; all zeros when none is live. The newest may be a lease's end,
// in the future: read as all at that time, no entry leaves the window earlier than it would have.
KeyState summarize(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now);

// from_summary is the state of a key holding `summarized.b` entries all at time `summarized.a`, read
// with a ring whose first `summarized.b` entries are zero (KeyTable::zero_ring, or a slot's ring after
// rebuild zeroed them).
KeyState from_summary(const KeyState& summarized);
void zero_entries(SlidingLogRing ring, const KeyState& summarized);

// Iteration over the live entries, oldest first, as absolute times (for export).
uint32_t count(const KeyState& state);
int64_t entry_time(const Rule& rule, const KeyState& state, SlidingLogRing ring, uint32_t index);
bool entry_lent(const Rule& rule, const KeyState& state, SlidingLogRing ring, uint32_t index);

}  // namespace sluice::sliding_log
