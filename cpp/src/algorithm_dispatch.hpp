#pragma once
#include <cstdint>

#include "sluice/algorithms/concurrency.hpp"
#include "sluice/algorithms/fixed_window.hpp"
#include "sluice/algorithms/gcra.hpp"
#include "sluice/algorithms/leaky_bucket.hpp"
#include "sluice/algorithms/sliding_counter.hpp"
#include "sluice/algorithms/sliding_log.hpp"
#include "sluice/algorithms/token_bucket.hpp"
#include "sluice/hot_path.hpp"

// One switch per operation, so the limiter and the key table treat every algorithm alike.
namespace sluice::dispatch {

inline Decision decide(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost) {
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

inline void charge(const Rule& rule, KeyState& state, SlidingLogRing ring, int64_t now, int64_t cost) {
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
SLUICE_HOT_INLINE inline Decision decide_and_charge(const Rule& rule, KeyState& state, SlidingLogRing ring,
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
inline bool valid_state(const Rule& rule, const KeyState& state) {
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

inline double usage(const Rule& rule, const KeyState& state, SlidingLogRing ring, int64_t now) {
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

}  // namespace sluice::dispatch
