#pragma once
#include <cstdint>

#include "sluice/rule.hpp"

// Leases: the object that counts a key exactly lends some of the key's quota to an isolate, which then
// decides from it locally until the lease ends. Lent units are charged to the key when lent, as if
// admitted then, so everything lent plus everything admitted directly never exceeds the rule.
//
// Which algorithms can lend, and why (docs/leases.md has the long form):
//  - fixed window and sliding-window counter: a unit lent in window w may be used only until w ends.
//    Used or not, it was counted in w, the only window in which it can be used: exact.
//  - token bucket, leaky bucket, GCRA: a unit charged at t0 and used at t1 lets the bucket refill,
//    meanwhile, what it thinks was spent. So a lease of n units for L ms charges the level as if the
//    units were spent at the lease's end: level' = max(level, drain over L) + n (in GCRA terms
//    TAT' = max(TAT, t0 + L) + n T). On any span, direct admissions then leave room for the n units
//    wherever in [t0, t0 + L] they are used: exact. The price, when the bucket is fuller than L's
//    drain, is that drain, held back until the lease ends; so a bucket's lease lasts at most a
//    quarter of the time its full bucket takes to drain. Unused units are not taken back (the
//    bucket drains them by itself).
//  - sliding-window log: not lent. It would have to count a lent unit in every window that overlaps
//    its lease (recording it at the lease's end does that), but the log judges expiry at its newest
//    entry, so a future entry would expire older ones early.
namespace sluice {

// Lease is what a lend() gave out.
struct Lease {
  int64_t units = 0;          // lent, charged to the key; 0 when the key is too near its limit to lend
  int64_t expires_at_ms = 0;  // the units may be used at times < this (never past a window rule's window)
  int64_t remaining = 0;      // what the key has left to admit or lend after this lease
};

// A lease takes at most this share of what the key has left: leases shrink as the key nears its
// limit, and below kLendShare units left nothing is lent (every request goes to the object).
inline constexpr int64_t kLendShare = 4;

// lends_as_bucket: the algorithms whose leases hold back the drain over the lease (see above).
inline bool lends_as_bucket(Algorithm algorithm) {
  return algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kLeakyBucket || algorithm == Algorithm::kGcra;
}

// can_lend reports whether leases of `algorithm` are exact (see above).
inline bool can_lend(Algorithm algorithm) {
  return algorithm == Algorithm::kFixedWindow || algorithm == Algorithm::kSlidingCounter || lends_as_bucket(algorithm);
}

}  // namespace sluice
