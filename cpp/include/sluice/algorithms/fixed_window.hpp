#pragma once
#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// Fixed window aligned to the epoch: window number = floor(now / window_ms).
// State: a = number of the window last charged, with the units lent ahead into the window after it
// (window_ahead.hpp), b = what was charged in it.
namespace sluice::fixed_window {

// decide reports what a request of `cost` at `now` would get, without changing `state`. A cost of 0
// describes the key as it stands (used for peeks and for decisions of calls denied by another rule).
Decision decide(const Rule& rule, const KeyState& state, int64_t now, int64_t cost);

// charge records an admitted request of `cost` at `now`. Call it only after decide admitted it.
void charge(const Rule& rule, KeyState& state, int64_t now, int64_t cost);

// admit is decide, then charge when admitted and `charge` is set, reading the key's window once (the
// single check's path).
Decision admit(const Rule& rule, KeyState& state, int64_t now, int64_t cost, bool charge);

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
// start; charge_ahead charges `units` (at most room_ahead) to it. Windows are separate: what is ahead
// takes nothing from now's window.
int64_t room_ahead(const Rule& rule, const KeyState& state, int64_t now);
void charge_ahead(const Rule& rule, KeyState& state, int64_t now, int64_t units);

}  // namespace sluice::fixed_window
