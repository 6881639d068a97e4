#pragma once
#include <cstdint>

#include "sluice/algorithms/concurrency.hpp"
#include "sluice/algorithms/fixed_window.hpp"
#include "sluice/algorithms/gcra.hpp"
#include "sluice/algorithms/leaky_bucket.hpp"
#include "sluice/algorithms/sliding_counter.hpp"
#include "sluice/algorithms/sliding_log.hpp"
#include "sluice/algorithms/token_bucket.hpp"
#include "sluice/block.hpp"
#include "sluice/hot_path.hpp"

// One switch per operation, so the limiter and the key table treat every algorithm alike. The
// algorithm_* functions are the algorithms alone; decide, charge, decide_and_charge, usage and
// valid_state add a blocking rule's blocks (block.hpp) around them, so no caller sees a blocked form.
namespace sluice::dispatch {

inline Decision algorithm_decide(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost) {
  switch (rule.algorithm) {
    case Algorithm::kFixedWindow: return fixed_window::decide(rule, state, now, cost);
    case Algorithm::kSlidingLog: return sliding_log::decide(rule, state, ring, now, cost);
    case Algorithm::kSlidingCounter: return sliding_counter::decide(rule, state, now, cost);
    case Algorithm::kTokenBucket: return token_bucket::decide(rule, state, now, cost);
    case Algorithm::kLeakyBucket: return leaky_bucket::decide(rule, state, now, cost);
    case Algorithm::kGcra: return gcra::decide(rule, state, now, cost);
    case Algorithm::kConcurrency: return concurrency::decide(rule, state, ring, now, cost);
  }
  return Decision{};
}

inline void algorithm_charge(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost) {
  switch (rule.algorithm) {
    case Algorithm::kFixedWindow: fixed_window::charge(rule, state, now, cost); return;
    case Algorithm::kSlidingLog: sliding_log::charge(rule, state, ring, now, cost); return;
    case Algorithm::kSlidingCounter: sliding_counter::charge(rule, state, now, cost); return;
    case Algorithm::kTokenBucket: token_bucket::charge(rule, state, now, cost); return;
    case Algorithm::kLeakyBucket: leaky_bucket::charge(rule, state, now, cost); return;
    case Algorithm::kGcra: gcra::charge(rule, state, now, cost); return;
    // A plain check of a concurrency rule acquires for nobody in particular: its units only expire.
    case Algorithm::kConcurrency:
      concurrency::acquire(rule, state, ring, now, concurrency::kAnonymousHolder, cost);
      return;
  }
}

// decide_and_charge is decide, then charge when the request is admitted and `charge` is set: one
// switch for both, so that each algorithm's two halves are compiled together (the single check's path).
SLUICE_HOT_INLINE inline Decision algorithm_decide_and_charge(const Rule& rule, KeyState& state, SlidingLogRing ring,
                                                              int64_t now, int64_t cost, bool charge) {
  switch (rule.algorithm) {
    case Algorithm::kFixedWindow: return fixed_window::admit(rule, state, now, cost, charge);
    case Algorithm::kSlidingLog: {
      const Decision d = sliding_log::decide(rule, state, ring, now, cost);
      if (d.allowed && charge) sliding_log::charge(rule, state, ring, now, cost);
      return d;
    }
    case Algorithm::kSlidingCounter: return sliding_counter::admit(rule, state, now, cost, charge);
    case Algorithm::kTokenBucket: return token_bucket::admit(rule, state, now, cost, charge);
    case Algorithm::kLeakyBucket: return leaky_bucket::admit(rule, state, now, cost, charge);
    case Algorithm::kGcra: return gcra::admit(rule, state, now, cost, charge);
    case Algorithm::kConcurrency: {
      const Decision d = concurrency::decide(rule, state, ring, now, cost);
      if (d.allowed && charge) concurrency::acquire(rule, state, ring, now, concurrency::kAnonymousHolder, cost);
      return d;
    }
  }
  return Decision{};
}

// ring_words is how many 32-bit words of per-key memory a rule needs besides its KeyState.
inline uint32_t ring_words(const Rule& rule) {
  if (rule.algorithm == Algorithm::kSlidingLog) return static_cast<uint32_t>(rule.limit);
  if (rule.algorithm == Algorithm::kConcurrency) return static_cast<uint32_t>(2 * rule.limit);
  return 0;
}

// valid_state checks imported state words. The sliding log's are not KeyState words but an entry count
// and entry times, which the limiter checks as it rebuilds the ring.
inline bool algorithm_valid_state(const Rule& rule, const KeyState& state) {
  switch (rule.algorithm) {
    case Algorithm::kFixedWindow: return fixed_window::valid_state(rule, state);
    case Algorithm::kSlidingLog: return true;
    case Algorithm::kSlidingCounter: return sliding_counter::valid_state(rule, state);
    case Algorithm::kTokenBucket: return token_bucket::valid_state(rule, state);
    case Algorithm::kLeakyBucket: return leaky_bucket::valid_state(rule, state);
    case Algorithm::kGcra: return gcra::valid_state(rule, state);
    case Algorithm::kConcurrency: return true;  // its entries are checked as the limiter rebuilds them
  }
  return false;
}

inline double algorithm_usage(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now) {
  switch (rule.algorithm) {
    case Algorithm::kFixedWindow: return fixed_window::usage(rule, state, now);
    case Algorithm::kSlidingLog: return sliding_log::usage(rule, state, ring, now);
    case Algorithm::kSlidingCounter: return sliding_counter::usage(rule, state, now);
    case Algorithm::kTokenBucket: return token_bucket::usage(rule, state, now);
    case Algorithm::kLeakyBucket: return leaky_bucket::usage(rule, state, now);
    case Algorithm::kGcra: return gcra::usage(rule, state, now);
    case Algorithm::kConcurrency: return concurrency::usage(rule, state, ring, now);
  }
  return 0;
}

// --- With blocks (block.hpp). A blocked form whose block has ended is a fresh key. ---

// decide: the algorithm's decision, or the block's; a denial of a blocking rule reports the block it starts.
inline Decision decide(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost) {
  if (rule.block_ms == 0) return algorithm_decide(rule, state, ring, now, cost);
  if (block::is_blocked_form(state)) {
    if (now < block::until(state)) return block::blocked_decision(rule, block::until(state), now, cost);
    return block::as_blocking(rule, algorithm_decide(rule, KeyState{}, ring, now, cost));
  }
  return block::as_blocking(rule, algorithm_decide(rule, state, ring, now, cost));
}

// charge records an admitted request: on a key whose block has ended, from a fresh state.
inline void charge(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost) {
  if (block::is_blocked_form(state)) state = KeyState{};
  algorithm_charge(rule, state, ring, now, cost);
}

// block_key blocks the key of a blocking rule's charged denial `d` (block::starts_block), until the end
// `d` reported: a key already blocked keeps the end it has.
inline void block_key(KeyState& state, int64_t now, const Decision& d) {
  state = block::blocked_until(now + d.retry_after_ms);
}

// decide_and_charge_blocking is decide_and_charge for a rule with block_ms (block.cpp): out of line, so
// that the single check's path of every other rule stays as small as it was.
Decision decide_and_charge_blocking(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost,
                                    bool charge);

// decide_and_charge: decide, then charge when admitted and `charge` is set; with `charge`, a blocking
// rule's denial blocks the key.
SLUICE_HOT_INLINE inline Decision decide_and_charge(const Rule& rule, KeyState& state, SlidingLogRing ring,
                                                    int64_t now, int64_t cost, bool charge) {
  if (rule.block_ms == 0) [[likely]] return algorithm_decide_and_charge(rule, state, ring, now, cost, charge);
  return decide_and_charge_blocking(rule, state, ring, now, cost, charge);
}

inline bool valid_state(const Rule& rule, const KeyState& state) {
  if (rule.block_ms != 0 && block::is_blocked_form(state)) return block::valid_blocked_state(state);
  return algorithm_valid_state(rule, state);
}

// usage: a blocked key is wholly used until its block ends, then idle.
inline double usage(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now) {
  if (block::is_blocked_form(state)) return now < block::until(state) ? 1.0 : 0.0;
  return algorithm_usage(rule, state, ring, now);
}

}  // namespace sluice::dispatch
