#pragma once
#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// Token bucket: holds up to burst tokens, refilled at limit per window_ms; a new key starts full.
// State (shared with the leaky bucket, see bucket_level.hpp): a = time of the last charge (ms),
// b = tokens missing at that time, in units of 1/rate_ms token.
namespace sluice::token_bucket {

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

}  // namespace sluice::token_bucket
