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
//    Lent ahead: within ahead_ms of w's end, units are lent from w + 1 instead, charged to w + 1 (beside
//    the window number: window_ahead.hpp) and usable only from w + 1's start. A fixed window's w + 1
//    counts them from its start. A sliding counter weighs w's count in whole at w + 1's start, so it
//    lends ahead at most limit - count(w) - ahead, and w's own decisions keep that room (count(w) +
//    ahead <= limit): a lent unit used anywhere in w + 1 is one a direct request at that time would
//    have been admitted as, since the estimate only falls as w slides out. Not with count_denied (a
//    denied request could grow count(w) past that room).
//  - token bucket, leaky bucket, GCRA: a unit charged at t0 and used at t1 lets the bucket refill,
//    meanwhile, what it thinks was spent. So a lease of n units for L ms charges the level as if the
//    units were spent at the lease's end: level' = max(level, drain over L) + n (in GCRA terms
//    TAT' = max(TAT, t0 + L) + n T). On any span, direct admissions then leave room for the n units
//    wherever in [t0, t0 + L] they are used: exact. The price, when the bucket is fuller than L's
//    drain, is that drain, held back until the lease ends; so a bucket's lease lasts at most a
//    quarter of the time its full bucket takes to drain. Unused units are not taken back (the
//    bucket drains them by itself).
//  - sliding-window log: a unit used anywhere in [t0, t0 + L) must be counted in every window that
//    holds its use, so it is recorded at the lease's end, t0 + L, marked as lent: it counts in every
//    window (t - window, t] with t < t0 + L + window, which covers all of them. The log's clock (its
//    guard against time running backwards) is its newest *direct* entry, so a lease's end in the future
//    never makes older entries leave early; the ring stays sorted (a direct entry goes before the lent
//    ones that end after it), and lend drops expired entries only up to that clock. The price: a lent
//    unit is counted L longer than a direct one, so the lease lasts at most a quarter window
//    (kLogLeaseShareOfWindow). Unused units are taken back exactly (give_back removes marked entries
//    with the lease's end). Copies of a key keep that: export/import carry the mark; the eviction
//    summary reads all entries at the newest one's time (a lease's end included), which lets none
//    leave earlier.
namespace sluice {

// Lease is what a lend() gave out.
struct Lease {
  int64_t units = 0;          // lent, charged to the key; 0 when the key is too near its limit to lend
  int64_t expires_at_ms = 0;  // the units may be used at times < this (never past a window rule's window)
  int64_t remaining = 0;      // what the key has left to admit or lend after this lease (lent ahead: in the next window)
  int64_t starts_at_ms = 0;   // the units may be used at times >= this: the lend's now, or the next window's start
};

// A lease takes at most this share of what the key has left: leases shrink as the key nears its
// limit, and below kLendShare units left nothing is lent (every request goes to the object).
inline constexpr int64_t kLendShare = 4;

// A sliding log's lease lasts at most this share of its window (see above).
inline constexpr int64_t kLogLeaseShareOfWindow = 4;

// lends_as_bucket: the algorithms whose leases hold back the drain over the lease (see above).
inline bool lends_as_bucket(Algorithm algorithm) {
  return algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kLeakyBucket || algorithm == Algorithm::kGcra;
}

// can_lend reports whether leases of `algorithm` are exact (see above).
inline bool can_lend(Algorithm algorithm) {
  return algorithm == Algorithm::kFixedWindow || algorithm == Algorithm::kSlidingCounter ||
         algorithm == Algorithm::kSlidingLog || lends_as_bucket(algorithm);
}

}  // namespace sluice
