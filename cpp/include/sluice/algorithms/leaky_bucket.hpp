#pragma once
#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// Leaky bucket as a meter: a level that rises by the cost of each admitted request and drains at
// limit per window_ms, up to burst. It makes exactly the token bucket's decisions (a full bucket of
// tokens is an empty meter); both exist because users know them under both names.
// State: a = time of the last charge (ms), b = level at that time, in units of 1/rate_ms.
namespace sluice::leaky_bucket {

// decide reports what a request of `cost` at `now` would get, without changing `state`. A cost of 0
// describes the key as it stands (used for peeks and for decisions of calls denied by another rule).
Decision decide(const Rule& rule, const KeyState& state, int64_t now, int64_t cost);

// charge records an admitted request of `cost` at `now`. Call it only after decide admitted it.
void charge(const Rule& rule, KeyState& state, int64_t now, int64_t cost);

// valid_state reports whether `state` is one this algorithm can produce under `rule`. Imported state is
// checked with it, so that no later arithmetic on corrupted words can overflow.
bool valid_state(const Rule& rule, const KeyState& state);

// usage is the share of the quota in use at `now`, from 0 (idle, full quota) to 1 (nothing left).
// The key table evicts the least used keys first.
double usage(const Rule& rule, const KeyState& state, int64_t now);

}  // namespace sluice::leaky_bucket
