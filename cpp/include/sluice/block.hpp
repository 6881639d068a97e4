#pragma once
#include <cstdint>

#include "sluice/arithmetic.hpp"
#include "sluice/decision.hpp"
#include "sluice/key_state.hpp"
#include "sluice/rule.hpp"

// Block durations (rate-limiter-flexible's blockDuration, the WAF's mitigation timeout). A rule with
// block_ms != 0 does not throttle a key that exceeds it: the denial that exceeds it blocks the key,
// which is then denied every request, whatever its cost, until the block ends, and then starts afresh
// at its full quota.
//
// The block lasts max(block_ms, reset_ms), reset_ms being what the algorithm reports for the key as it
// stands at that denial: the time until it is back to its full quota. So a block is never shorter than
// what the key already owed, and starting afresh at its end never admits more than throttling would:
// a short block_ms on a long window cannot hand out a second quota inside the window.
//
// A blocked key's state is a = ~until (negative, which no algorithm's state ever is: every algorithm
// keeps a >= 0), b = 0. For the sliding log, b = 0 is also an empty ring, so a block needs no ring.
// The form travels in state bytes like any state (under a signature that includes block_ms), so every
// store that moves state bytes (the Durable Object, Redis) blocks exactly as the isolate does.
//
// A denial that no wait can admit (a cost above what the rule can hold, retry_after kNever) blocks
// nothing: it says nothing about the key's rate.
namespace sluice::block {

inline bool is_blocked_form(const KeyState& state) { return state.a < 0; }
inline int64_t until(const KeyState& state) { return ~state.a; }
inline KeyState blocked_until(int64_t until_ms) { return KeyState{~until_ms, 0}; }

// The decision on a key blocked until `until_ms`, at `now` < until_ms.
inline Decision blocked_decision(const Rule& rule, int64_t until_ms, int64_t now, int64_t cost) {
  Decision d;
  d.allowed = false;
  d.limit = rule.capacity;
  d.remaining = 0;
  d.reset_ms = until_ms - now;
  d.retry_after_ms = cost > rule.capacity ? kNever : until_ms - now;
  return d;
}

// starts_block reports whether a charged denial `d` of a blocking rule blocks the key.
inline bool starts_block(const Rule& rule, const Decision& d) {
  return rule.block_ms != 0 && !d.allowed && d.retry_after_ms != kNever;
}

// as_blocking turns an algorithm's denial into the blocking rule's: the key is denied until the block
// ends, then back to its full quota. `d` is the algorithm's decision on the key as it stands.
inline Decision as_blocking(const Rule& rule, Decision d) {
  if (!starts_block(rule, d)) return d;
  const int64_t lasts = detail::max64(rule.block_ms, d.reset_ms);
  d.remaining = 0;
  d.reset_ms = lasts;
  d.retry_after_ms = lasts;
  return d;
}

// valid_blocked_state: an imported blocked form ends at a time a decision can report exactly.
inline bool valid_blocked_state(const KeyState& state) {
  return state.b == 0 && until(state) >= 0 && until(state) <= kMaxExactInteger;
}

}  // namespace sluice::block
