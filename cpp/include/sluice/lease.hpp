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
//  - sliding-window log, token bucket, leaky bucket, GCRA: not lent. The log would have to count a
//    lent unit in every window that overlaps its lease (recording it at the lease's end does that),
//    but the log judges expiry at its newest entry, so a future entry would expire older ones early.
//    The buckets refill between the charge and the use: a unit charged at t0 and used at t1 lets the
//    bucket hand out the tokens that refilled meanwhile on top of it, which breaks the bucket's bound
//    on any span starting after t0 (by up to the lease's refill).
namespace sluice {

// Lease is what a lend() gave out.
struct Lease {
  int64_t units = 0;          // lent, charged to the key; 0 when the key is too near its limit to lend
  int64_t expires_at_ms = 0;  // the units may be used at times < this (never past the key's window)
  int64_t remaining = 0;      // what the key has left to admit or lend after this lease
};

// A lease takes at most this share of what the key has left: leases shrink as the key nears its
// limit, and below kLendShare units left nothing is lent (every request goes to the object).
inline constexpr int64_t kLendShare = 4;

// can_lend reports whether leases of `algorithm` are exact (see above).
inline bool can_lend(Algorithm algorithm) {
  return algorithm == Algorithm::kFixedWindow || algorithm == Algorithm::kSlidingCounter;
}

}  // namespace sluice
