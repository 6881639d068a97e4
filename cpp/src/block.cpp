// The blocking rule's single check (algorithm_dispatch.hpp), kept out of the inlined path of the others.
#include "algorithm_dispatch.hpp"

namespace sluice::dispatch {

__attribute__((noinline)) Decision decide_and_charge_blocking(const Rule& rule, KeyState& state, SlidingLogRing ring,
                                                              int64_t now, int64_t cost, bool charge) {
  const Decision d = decide(rule, state, ring, now, cost);
  if (!charge) return d;
  if (d.allowed) {
    dispatch::charge(rule, state, ring, now, cost);
  } else if (block::starts_block(rule, d)) {
    block_key(state, now, d);
  }
  return d;
}

}  // namespace sluice::dispatch
