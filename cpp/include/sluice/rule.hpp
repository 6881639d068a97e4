#pragma once
#include <cstdint>

#include "sluice/status.hpp"

namespace sluice {

// Algorithm values are part of the ABI (mirrored in wasm-bindings/sluice.js).
enum class Algorithm : uint8_t {
  kFixedWindow = 0,
  kSlidingLog = 1,
  kSlidingCounter = 2,
  kTokenBucket = 3,
  kLeakyBucket = 4,
  kGcra = 5,
  kConcurrency = 6,  // not a rate: at most `limit` held at once, each lease window_ms (algorithms/concurrency.hpp)
};
inline constexpr int kAlgorithmCount = 7;

// RuleConfig is a rule as the user states it.
//  - Windows (fixed, sliding log, sliding counter): at most `limit` per `window_ms`.
//  - Token bucket, leaky bucket, GCRA: a sustained rate of `limit` per `window_ms`, with bursts up to
//    `burst` (0 means burst == limit).
//  - count_denied (sliding counter only): denied requests count too, as in Cloudflare's counter, so a
//    client that keeps sending while limited stays limited. Without it only admitted requests count.
//  - Concurrency: at most `limit` units held at once; a unit not renewed expires `window_ms` (the lease)
//    after it was acquired or last renewed.
//  - block_ms (rate rules, not with count_denied): a key that exceeds the rule is denied everything for
//    block_ms, or until the algorithm would have restored its full quota if that is later, and then
//    starts afresh (block.hpp). 0, the default, throttles: only the excess is denied.
struct RuleConfig {
  Algorithm algorithm = Algorithm::kFixedWindow;
  int64_t limit = 0;
  int64_t window_ms = 0;
  int64_t burst = 0;
  bool count_denied = false;
  int64_t block_ms = 0;
};

// Rule is a validated RuleConfig with the integer constants the algorithms need, derived once.
// Rates are kept as the reduced fraction rate_tokens / rate_ms so that every algorithm stays in exact
// integer arithmetic: nothing is ever rounded, so native and wasm agree to the millisecond.
struct Rule {
  Algorithm algorithm = Algorithm::kFixedWindow;
  int64_t limit = 0;       // window quota, or sustained tokens per window
  int64_t window_ms = 0;
  int64_t capacity = 0;    // what can be admitted at once: limit for windows, burst for buckets
  int64_t rate_tokens = 0; // limit / gcd(limit, window_ms)
  int64_t rate_ms = 0;     // window_ms / gcd(limit, window_ms)
  bool count_denied = false;
  int64_t block_ms = 0;    // 0: throttle; otherwise a key that exceeds the rule is blocked (block.hpp)
};

// Bounds chosen so that no intermediate product overflows int64 (see make_rule). They are far above
// what any HTTP rate limit needs: a day is 8.64e7 ms.
inline constexpr int64_t kMaxLimit = int64_t{1} << 31;
inline constexpr int64_t kMaxWindowMs = int64_t{1} << 36;  // about 2.2 years
// Times are milliseconds since the Unix epoch, and must be in [0, kMaxTimeMs] (about year 141,000).
inline constexpr int64_t kMaxTimeMs = int64_t{1} << 42;
// The ABI carries times and counts as doubles, exact up to 2^53: a rule is refused when any time a
// decision can report (a window's end, a reset or retry delay: at most now + 2 windows, or a bucket's
// capacity in time) could pass it.
inline constexpr int64_t kMaxExactInteger = int64_t{1} << 53;

// make_rule validates `config` and derives a Rule. On failure it returns kInvalidRule and sets
// `field` to the name of the offending field ("limit", "window_ms", "burst", "algorithm", "block_ms").
Status make_rule(const RuleConfig& config, Rule* out, const char** field);

}  // namespace sluice
