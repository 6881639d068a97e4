#pragma once
#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// Sliding-window counter: the previous window's count, weighted by the share of it still
// inside the sliding window, plus the current window's count (Cloudflare's approximation).
// State: a = number of the current window, with the units lent ahead into the window after it
// (window_ahead.hpp), b = current count (low 32 bits) | previous count (high 32).
// It admits fewer than 2 x limit in any window of window_ms, and exactly limit when traffic is even.
namespace sluice::sliding_counter {

// decide reports what a request of `cost` at `now` would get, without changing `state`. A cost of 0
// describes the key as it stands (used for peeks and for decisions of calls denied by another rule).
Decision decide(const Rule& rule, const KeyState& state, int64_t now, int64_t cost);

// charge records an admitted request of `cost` at `now`. Call it only after decide admitted it.
void charge(const Rule& rule, KeyState& state, int64_t now, int64_t cost);

// admit is decide, then charge when admitted and `charge` is set, reading the key's windows once (the
// single check's path).
Decision admit(const Rule& rule, KeyState& state, int64_t now, int64_t cost, bool charge);

// count_denied records a denied request of `cost` at `now`, for a rule with count_denied: counts are
// capped (count_cap) so that the arithmetic stays in range; a capped count denies anyway.
void count_denied(const Rule& rule, KeyState& state, int64_t now, int64_t cost);
int64_t count_cap(const Rule& rule);

// valid_state reports whether `state` is one this algorithm can produce under `rule`. Imported state is
// checked with it, so that no later arithmetic on corrupted words can overflow.
bool valid_state(const Rule& rule, const KeyState& state);

// usage is the share of the quota in use at `now`, from 0 (idle, full quota) to 1 (nothing left).
// The key table evicts the least used keys first.
double usage(const Rule& rule, const KeyState& state, int64_t now);

// Leases (lease.hpp): units lent out are charged like admitted requests, in the window the key is in.
// window_of is that window at `now` (a later one than now's if time ran backwards); give_back takes
// back up to `units` charged in window `window`, if the key is still in it, and returns how many.
// A unit given back from a lease lent ahead (its window is the key's next one) comes off what is ahead.
int64_t window_of(const Rule& rule, const KeyState& state, int64_t now);
int64_t give_back(const Rule& rule, KeyState& state, int64_t window, int64_t units);

// Lending ahead (lease.hpp): room_ahead is how many more units the window after now's can take at its
// start, where now's count weighs in whole (0 for a rule with count_denied); charge_ahead charges
// `units` (at most room_ahead) to it. Decisions in now's window then keep room for them.
int64_t room_ahead(const Rule& rule, const KeyState& state, int64_t now);
void charge_ahead(const Rule& rule, KeyState& state, int64_t now, int64_t units);

}  // namespace sluice::sliding_counter
