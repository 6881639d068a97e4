#pragma once
#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// Sliding-window log: the exact algorithm. It remembers the time of every admitted unit of cost in the
// last window_ms (a ring of `limit` entries) and admits while fewer than `limit` are inside the window.
// State: a = base time (ms) the ring's 32-bit offsets count from; b = ring head (low 32) | count (high 32).
// Memory per key: 4 bytes per unit of limit, on top of the key table's slot.
namespace sluice::sliding_log {

// decide reports what a request of `cost` at `now` would get, without changing `state`. A cost of 0
// describes the key as it stands (used for peeks and for decisions of calls denied by another rule).
Decision decide(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost);

// charge records an admitted request of `cost` at `now`. Call it only after decide admitted it.
void charge(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost);

// usage is the share of the quota in use at `now`, from 0 to 1.
double usage(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now);

// summarize describes the entries live at `now` in the eviction summary's form (eviction_summary.hpp):
// a = the newest one's time, b = how many; all zeros when none is live.
KeyState summarize(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now);

// from_summary is the state of a key holding `summarized.b` entries all at time `summarized.a`, read
// with a ring whose first `summarized.b` entries are zero (KeyTable::zero_ring, or a slot's ring after
// rebuild zeroed them).
KeyState from_summary(const KeyState& summarized);
void zero_entries(SlidingLogRing ring, const KeyState& summarized);

// Iteration over the live entries, oldest first, as absolute times (for export).
uint32_t count(const KeyState& state);
int64_t entry_time(const Rule& rule, const KeyState& state, SlidingLogRing ring, uint32_t index);

}  // namespace sluice::sliding_log
