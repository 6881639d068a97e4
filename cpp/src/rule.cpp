#include "sluice/rule.hpp"

#include <numeric>

#include "sluice/arithmetic.hpp"
#include "sluice/algorithms/concurrency.hpp"

namespace sluice {
namespace {

// Every product of a count and a time the algorithms keep (limit * window_ms, capacity * rate_ms,
// time * rate_tokens) stays below 2^61, because they add up to three of them: the sliding counter's
// weighted count (two), a bucket's level plus a cost (two), GCRA's now + tolerance + cost (three).
constexpr int64_t kMaxProduct = int64_t{1} << 61;
// A window's times (its end, the sliding counter's reset two windows from now, three with units lent
// ahead) stay exact by the bounds alone; a bucket's delays depend on burst and rate, and are checked in
// make_rule.
static_assert(kMaxTimeMs + 3 * kMaxWindowMs <= kMaxExactInteger, "window times must stay exact doubles");

Status reject(const char* name, const char** field) {
  if (field != nullptr) *field = name;
  return Status::kInvalidRule;
}

bool is_bucket(Algorithm algorithm) {
  return algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kLeakyBucket ||
         algorithm == Algorithm::kGcra;
}

}  // namespace

Status make_rule(const RuleConfig& config, Rule* out, const char** field) {
  if (static_cast<int>(config.algorithm) >= kAlgorithmCount) return reject("algorithm", field);
  if (config.limit < 1 || config.limit > kMaxLimit) return reject("limit", field);
  if (config.window_ms < 1 || config.window_ms > kMaxWindowMs) return reject("window_ms", field);
  if (config.burst < 0 || config.burst > kMaxLimit) return reject("burst", field);
  if (config.burst != 0 && !is_bucket(config.algorithm)) return reject("burst", field);
  if (config.count_denied && config.algorithm != Algorithm::kSlidingCounter) return reject("count_denied", field);
  // A block is at most as long as the longest window, so a block's end stays an exact double. The
  // concurrency rule is not a rate (nothing "exceeds" it over time), and a rule counting denied requests
  // would count them into a blocked key's state, which holds no counts.
  if (config.block_ms < 0 || config.block_ms > kMaxWindowMs) return reject("block_ms", field);
  if (config.block_ms != 0 && (config.algorithm == Algorithm::kConcurrency || config.count_denied)) {
    return reject("block_ms", field);
  }
  // The sliding counter multiplies counts by window lengths.
  if (config.limit > kMaxProduct / config.window_ms) return reject("window_ms", field);
  // The log keeps 32-bit offsets inside one window.
  if (config.algorithm == Algorithm::kSlidingLog && config.window_ms > (int64_t{1} << 31)) {
    return reject("window_ms", field);
  }

  // Each held unit costs 8 bytes of the key's memory, and leases are 32-bit offsets.
  if (config.algorithm == Algorithm::kConcurrency) {
    if (config.limit > concurrency::kMaxConcurrency) return reject("limit", field);
    if (config.window_ms > concurrency::kMaxLeaseMs) return reject("window_ms", field);
  }

  Rule rule;
  rule.algorithm = config.algorithm;
  rule.limit = config.limit;
  rule.window_ms = config.window_ms;
  rule.capacity = is_bucket(config.algorithm) && config.burst != 0 ? config.burst : config.limit;
  const int64_t divisor = std::gcd(config.limit, config.window_ms);
  rule.rate_tokens = config.limit / divisor;
  rule.rate_ms = config.window_ms / divisor;
  rule.count_denied = config.count_denied;
  rule.block_ms = config.block_ms;
  if (is_bucket(config.algorithm)) {
    // Bucket levels are counted in 1/rate_ms of a token: capacity * rate_ms must fit.
    if (rule.capacity > kMaxProduct / rule.rate_ms) return reject("burst", field);
    // GCRA keeps time in 1/rate_tokens of a millisecond: every time * rate_tokens must fit.
    if (config.algorithm == Algorithm::kGcra && rule.rate_tokens > kMaxProduct / kMaxTimeMs) {
      return reject("limit", field);
    }
    // The longest delay a bucket reports: emptying a full bucket of `burst` tokens at the rate.
    if (detail::ceil_div(rule.capacity * rule.rate_ms, rule.rate_tokens) > kMaxExactInteger - kMaxTimeMs) {
      return reject("burst", field);
    }
  }
  *out = rule;
  return Status::kOk;
}

}  // namespace sluice
