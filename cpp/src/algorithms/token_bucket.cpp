#include "sluice/algorithms/token_bucket.hpp"

#include "bucket_level.hpp"

namespace sluice::token_bucket {

Decision decide(const Rule& rule, const KeyState& state, int64_t now, int64_t cost) {
  return bucket_level::decide(rule, state, now, cost);
}

void charge(const Rule& rule, KeyState& state, int64_t now, int64_t cost) {
  bucket_level::charge(rule, state, now, cost);
}

bool valid_state(const Rule& rule, const KeyState& state) { return bucket_level::valid_state(rule, state); }

double usage(const Rule& rule, const KeyState& state, int64_t now) {
  return bucket_level::usage(rule, state, now);
}

}  // namespace sluice::token_bucket
