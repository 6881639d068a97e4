#pragma once
#include <cstdint>

#include "sluice/decision.hpp"
#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// GCRA (generic cell rate algorithm), as in redis-cell. One word of state, the theoretical arrival
// time (TAT): when the key would be back to an empty bucket if no more requests came. Each unit of cost
// pushes it forward by the emission interval (window_ms / limit); a request is admitted while
// TAT - now stays within the delay-variation tolerance (burst emission intervals).
// State: a = TAT in units of 1/rate_tokens ms; b unused. Decisions equal the token bucket's for
// time that never runs backwards; when it does, GCRA is the stricter of the two.
namespace sluice::gcra {

// decide reports what a request of `cost` at `now` would get, without changing `state`. A cost of 0
// describes the key as it stands (used for peeks and for decisions of calls denied by another rule).
Decision decide(const Rule& rule, const KeyState& state, int64_t now, int64_t cost);

// charge records an admitted request of `cost` at `now`. Call it only after decide admitted it.
void charge(const Rule& rule, KeyState& state, int64_t now, int64_t cost);

// admit is decide, then charge when admitted and `charge` is set (the single check's path).
Decision admit(const Rule& rule, KeyState& state, int64_t now, int64_t cost, bool charge);

// valid_state reports whether `state` is one this algorithm can produce under `rule`. Imported state is
// checked with it, so that no later arithmetic on corrupted words can overflow.
bool valid_state(const Rule& rule, const KeyState& state);

// usage is the share of the quota in use at `now`, from 0 (idle, full quota) to 1 (nothing left).
// The key table evicts the least used keys first.
double usage(const Rule& rule, const KeyState& state, int64_t now);

}  // namespace sluice::gcra
