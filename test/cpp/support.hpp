#pragma once
// Helpers shared by the Catch2 suites: a seeded generator, names for the core's enums, and Harness, a
// Limiter with one-key conveniences that fail the test on any status but kOk.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/limiter.hpp"

namespace sluice {

// Decisions compare field by field; tests print them with StringMaker below.
inline bool operator==(const Decision& x, const Decision& y) {
  return x.allowed == y.allowed && x.limit == y.limit && x.remaining == y.remaining &&
         x.reset_ms == y.reset_ms && x.retry_after_ms == y.retry_after_ms;
}

}  // namespace sluice

namespace Catch {
template <>
struct StringMaker<sluice::Decision> {
  static std::string convert(const sluice::Decision& d) {
    std::ostringstream out;
    out << "{allowed " << (d.allowed ? "true" : "false") << ", limit " << d.limit << ", remaining "
        << d.remaining << ", reset " << d.reset_ms << ", retryAfter ";
    if (d.retry_after_ms == sluice::kNever) {
      out << "never}";
    } else {
      out << d.retry_after_ms << "}";
    }
    return out.str();
  }
};
template <>
struct StringMaker<sluice::Status> {
  static std::string convert(sluice::Status s) { return std::to_string(static_cast<int>(s)); }
};
}  // namespace Catch

namespace sluice::test {

// Random is SplitMix64: a seeded stream that is the same on every platform and standard library
// (std's distributions are not), so a failing seed reproduces anywhere.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // between returns a number in [low, high].
  int64_t between(int64_t low, int64_t high) {
    return low + static_cast<int64_t>(next() % static_cast<uint64_t>(high - low + 1));
  }
  bool percent(int chance) { return between(0, 99) < chance; }

 private:
  uint64_t state_;
};

inline constexpr SipHashKey kTestSeed{0x0123456789abcdefULL, 0xfedcba9876543210ULL};

inline constexpr Algorithm kAllAlgorithms[] = {
    Algorithm::kFixedWindow, Algorithm::kSlidingLog,  Algorithm::kSlidingCounter,
    Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kGcra,
};

// The names the JS loader and the vectors use, indexed by the Algorithm value.
inline constexpr const char* kAlgorithmNames[] = {
    "fixed-window", "sliding-log", "sliding-counter", "token-bucket", "leaky-bucket", "gcra", "concurrency",
};
inline const char* name_of(Algorithm algorithm) {
  const auto index = static_cast<int>(algorithm);
  return index < kAlgorithmCount ? kAlgorithmNames[index] : "(no such algorithm)";
}

inline bool is_bucket(Algorithm algorithm) {
  return algorithm == Algorithm::kTokenBucket || algorithm == Algorithm::kLeakyBucket ||
         algorithm == Algorithm::kGcra;
}

// The status names of wasm-bindings/sluice.js, indexed by the Status value.
inline constexpr const char* kStatusNames[] = {
    "OK",          "KEY_TOO_LONG",  "INVALID_RULE", "INVALID_COST",     "UNKNOWN_RULE",     "TOO_MANY_CHECKS",
    "OUT_OF_MEMORY", "INVALID_STATE", "NOT_FOUND",  "BUFFER_TOO_SMALL", "INVALID_ARGUMENT",
};
inline const char* name_of(Status status) {
  const auto index = static_cast<size_t>(status);
  return index < std::size(kStatusNames) ? kStatusNames[index] : "(no such status)";
}

inline Check check_of(uint32_t rule, std::string_view key, int64_t cost) {
  return Check{rule, reinterpret_cast<const uint8_t*>(key.data()), static_cast<uint32_t>(key.size()), cost};
}

inline const uint8_t* bytes_of(std::string_view key) { return reinterpret_cast<const uint8_t*>(key.data()); }

inline int64_t read_i64(const std::vector<uint8_t>& bytes, size_t offset) {
  int64_t value;
  std::memcpy(&value, bytes.data() + offset, 8);
  return value;
}
inline void write_i64(std::vector<uint8_t>& bytes, size_t offset, int64_t value) {
  std::memcpy(bytes.data() + offset, &value, 8);
}

// Harness is a Limiter with the test seed and one-key calls that REQUIRE kOk.
class Harness {
 public:
  explicit Harness(SipHashKey seed = kTestSeed) : limiter(seed) {}

  // no_growth keeps every table at the size it was added with (Limiter::set_table_growth), for tests
  // of eviction and the summary themselves.
  void no_growth() { limiter.set_table_growth(1, 0); }

  uint32_t add(Algorithm algorithm, int64_t limit, int64_t window_ms, int64_t burst = 0,
               uint32_t key_capacity = 100, int64_t block_ms = 0) {
    uint32_t id = 0;
    const char* field = nullptr;
    RuleConfig config{algorithm, limit, window_ms, burst};
    config.block_ms = block_ms;
    const Status status = limiter.add_rule(config, key_capacity, &id, &field);
    INFO("add_rule " << name_of(algorithm) << " limit " << limit << " window " << window_ms << " burst " << burst
                     << " failed on field " << (field == nullptr ? "?" : field));
    REQUIRE(status == Status::kOk);
    return id;
  }

  Decision check(uint32_t rule, std::string_view key, int64_t cost, int64_t now) { return run(true, rule, key, cost, now); }
  Decision peek(uint32_t rule, std::string_view key, int64_t cost, int64_t now) { return run(false, rule, key, cost, now); }

  // exported is the key's state bytes, or nothing if the rule holds no state for it.
  std::optional<std::vector<uint8_t>> exported(uint32_t rule, std::string_view key) {
    uint32_t size = 0;
    if (limiter.exported_state_bytes(rule, &size) != Status::kOk) FAIL("exported_state_bytes: no rule " << rule);
    std::vector<uint8_t> bytes(size);
    uint32_t written = 0;
    const Status status = limiter.export_state(rule, bytes_of(key), static_cast<uint32_t>(key.size()), bytes.data(),
                                               size, &written);
    if (status == Status::kNotFound) return std::nullopt;
    if (status != Status::kOk) FAIL("export_state: " << name_of(status));
    bytes.resize(written);
    return bytes;
  }

  Status import(uint32_t rule, std::string_view key, const std::vector<uint8_t>& bytes) {
    return limiter.import_state(rule, bytes_of(key), static_cast<uint32_t>(key.size()), bytes.data(),
                                static_cast<uint32_t>(bytes.size()));
  }

  TableStats stats(uint32_t rule) {
    TableStats out;
    REQUIRE(limiter.stats(rule, &out) == Status::kOk);
    return out;
  }

  Limiter limiter;

 private:
  Decision run(bool charge, uint32_t rule, std::string_view key, int64_t cost, int64_t now) {
    const Check c = check_of(rule, key, cost);
    Decision per[1];
    Outcome outcome;
    const Status status = charge ? limiter.check(&c, 1, now, per, &outcome) : limiter.peek(&c, 1, now, per, &outcome);
    // Plain ifs rather than REQUIREs: the property tests make millions of these calls.
    if (status != Status::kOk) FAIL((charge ? "check: " : "peek: ") << name_of(status));
    if (outcome.deciding_check != 0) FAIL("deciding_check " << outcome.deciding_check << " of a single check");
    return outcome.decision;
  }
};

}  // namespace sluice::test
