// The bounded key table, seen through the limiter: its size never grows, a flood of fresh keys cannot
// reset a key that is limiting someone, evictions are counted, and keys of any allowed length work.
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using namespace sluice;
using namespace sluice::test;

constexpr int64_t kLimit = 10;
constexpr int64_t kWindowMs = 60000;
constexpr int64_t kNow = 1'700'000'000'000;

std::string flood_key(int i) { return "flood-" + std::to_string(i); }

}  // namespace

TEST_CASE("a key table never holds more keys than its slots, and its memory is fixed at init", "[key-table]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    const uint32_t rule = h.add(algorithm, kLimit, kWindowMs, 0, 1000);
    const TableStats empty = h.stats(rule);
    CHECK(empty.keys == 0);
    CHECK(empty.slots >= 1000);
    CHECK(empty.memory_bytes > 0);
    for (int i = 0; i < 5000; ++i) {
      REQUIRE(h.check(rule, flood_key(i), 1, kNow + i).allowed);
      if (i % 500 == 0) {
        const TableStats now = h.stats(rule);
        REQUIRE(now.keys <= now.slots);
        REQUIRE(now.memory_bytes == empty.memory_bytes);
      }
    }
    const TableStats full = h.stats(rule);
    CHECK(full.keys <= full.slots);
    CHECK(full.keys >= 1000);  // two-choice hashing fills the table before it evicts much
    CHECK(full.slots == empty.slots);
    CHECK(full.memory_bytes == empty.memory_bytes);
    CHECK(full.evictions == 5000 - full.keys);
  }
}

TEST_CASE("the eviction flood: 100x capacity fresh keys cannot reset an exhausted key", "[key-table]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    const uint32_t rule = h.add(algorithm, kLimit, kWindowMs, 0, 1000);
    const Decision exhausted = h.check(rule, "attacker", kLimit, kNow);
    REQUIRE(exhausted.allowed);
    REQUIRE(exhausted.remaining == 0);
    // The flood: every fresh key admitted, over one second.
    for (int i = 0; i < 100 * 1000; ++i) {
      if (!h.check(rule, flood_key(i), 1, kNow + i / 100).allowed) FAIL("flood key " << i << " denied");
    }
    const Decision after = h.check(rule, "attacker", 1, kNow + 1000);
    CHECK_FALSE(after.allowed);
    CHECK(after.remaining == 0);
    CHECK(after.retry_after_ms > 0);
    const TableStats stats = h.stats(rule);
    CHECK(stats.keys <= stats.slots);
    CHECK(stats.evictions >= 100 * 1000 - stats.slots);
    CHECK(stats.evictions_of_exhausted == 0);
  }
}

TEST_CASE("evicting keys that had used their whole quota is counted apart", "[key-table]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    const uint32_t rule = h.add(algorithm, kLimit, kWindowMs, 0, 100);
    for (int i = 0; i < 1000; ++i) REQUIRE(h.check(rule, flood_key(i), kLimit, kNow).allowed);
    const TableStats stats = h.stats(rule);
    CHECK(stats.evictions == 1000 - stats.keys);
    CHECK(stats.evictions_of_exhausted == stats.evictions);
  }
}

TEST_CASE("denied and peeked requests never take a slot", "[key-table]") {
  Harness h;
  const uint32_t guard = h.add(Algorithm::kFixedWindow, 1, kWindowMs);
  const uint32_t rule = h.add(Algorithm::kTokenBucket, kLimit, kWindowMs, 0, 100);
  REQUIRE(h.check(guard, "ip", 1, kNow).allowed);
  for (int i = 0; i < 1000; ++i) {
    h.peek(rule, flood_key(i), 1, kNow);
    h.check(rule, flood_key(i), kLimit + 1, kNow);  // above the capacity: denied
    const std::string key = flood_key(i);
    const Check checks[2] = {check_of(guard, "ip", 1), check_of(rule, key, 1)};
    Decision per[2];
    Outcome outcome;
    REQUIRE(h.limiter.check(checks, 2, kNow, per, &outcome) == Status::kOk);
    REQUIRE_FALSE(outcome.decision.allowed);
  }
  CHECK(h.stats(rule).keys == 0);
  CHECK(h.stats(rule).evictions == 0);
}

TEST_CASE("keys: 512 bytes work, 513 are refused everywhere, the empty key works", "[key-table]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kFixedWindow, 2, kWindowMs);
  const std::string longest(kMaxKeyBytes, 'k');
  const std::string too_long(kMaxKeyBytes + 1, 'k');
  CHECK(h.check(rule, longest, 1, kNow).remaining == 1);
  CHECK(h.check(rule, longest, 1, kNow).remaining == 0);
  CHECK_FALSE(h.check(rule, longest, 1, kNow).allowed);
  // A key that differs only in its last byte is another key.
  CHECK(h.check(rule, std::string(kMaxKeyBytes - 1, 'k') + "x", 1, kNow).remaining == 1);

  Decision per[1];
  Outcome outcome;
  const Check long_check = check_of(rule, too_long, 1);
  CHECK(h.limiter.check(&long_check, 1, kNow, per, &outcome) == Status::kKeyTooLong);
  CHECK(h.limiter.peek(&long_check, 1, kNow, per, &outcome) == Status::kKeyTooLong);
  CHECK(h.limiter.reset(rule, bytes_of(too_long), kMaxKeyBytes + 1) == Status::kKeyTooLong);
  uint8_t state[64];
  uint32_t written = 0;
  CHECK(h.limiter.export_state(rule, bytes_of(too_long), kMaxKeyBytes + 1, state, sizeof state, &written) ==
        Status::kKeyTooLong);
  CHECK(h.limiter.import_state(rule, bytes_of(too_long), kMaxKeyBytes + 1, state, 24) == Status::kKeyTooLong);
  CHECK(h.stats(rule).keys == 2);

  // The empty key, as an empty string and as a null pointer of length 0: the same key.
  CHECK(h.check(rule, "", 1, kNow).remaining == 1);
  const Check null_key{rule, nullptr, 0, 1};
  REQUIRE(h.limiter.check(&null_key, 1, kNow, per, &outcome) == Status::kOk);
  CHECK(outcome.decision.remaining == 0);
  const Check null_with_length{rule, nullptr, 3, 1};
  CHECK(h.limiter.check(&null_with_length, 1, kNow, per, &outcome) == Status::kInvalidArgument);
}

// Not a pass/fail check: the figures the README quotes. Run `sluice_tests "[report]"` to see them.
TEST_CASE("bytes per key at a capacity of 1,000,000 keys", "[key-table][report]") {
  struct Shape {
    Algorithm algorithm;
    int64_t limit;
  };
  for (const Shape shape : {Shape{Algorithm::kFixedWindow, 100}, Shape{Algorithm::kSlidingCounter, 100},
                            Shape{Algorithm::kTokenBucket, 100}, Shape{Algorithm::kLeakyBucket, 100},
                            Shape{Algorithm::kGcra, 100}, Shape{Algorithm::kSlidingLog, 10},
                            Shape{Algorithm::kSlidingLog, 100}}) {
    Harness h;
    const uint32_t rule = h.add(shape.algorithm, shape.limit, kWindowMs, 0, 1'000'000);
    const TableStats stats = h.stats(rule);
    CHECK(stats.slots >= 1'000'000);
    const double per_key = static_cast<double>(stats.memory_bytes) / 1e6;
    WARN(name_of(shape.algorithm) << " (limit " << shape.limit << "): " << stats.memory_bytes
                                  << " bytes for 1,000,000 keys = " << per_key << " bytes per key (" << stats.slots
                                  << " slots)");
  }
}
