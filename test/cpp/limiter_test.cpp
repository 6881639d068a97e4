// The Limiter's contract beyond single decisions: rule validation naming the field, all-or-nothing calls,
// summed costs, refused calls that change nothing, and state bytes that survive a round trip but not
// corruption. The decisions themselves are in the shared vectors and the property tests.
#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using namespace sluice;
using namespace sluice::test;

constexpr int64_t kNow = 1'700'000'000'000;

// A rule config rejected with kInvalidRule must name `field` and add no rule.
void expect_rejected(const RuleConfig& config, uint32_t key_capacity, const char* field) {
  Limiter limiter(kTestSeed);
  uint32_t id = 99;
  const char* named = nullptr;
  INFO(name_of(config.algorithm) << " limit " << config.limit << " window_ms " << config.window_ms << " burst "
                                 << config.burst << " key_capacity " << key_capacity);
  CHECK(limiter.add_rule(config, key_capacity, &id, &named) == Status::kInvalidRule);
  REQUIRE(named != nullptr);
  CHECK(std::string(named) == field);
  CHECK(id == 99);
  CHECK(limiter.rule_count() == 0);
  // Without a place to name the field, the same answer and no crash.
  CHECK(limiter.add_rule(config, key_capacity, &id, nullptr) == Status::kInvalidRule);
}

// A decision a caller can act on: within the rule's bounds, retry 0 exactly when admitted.
void require_sane(const Decision& d, int64_t capacity) {
  INFO(Catch::StringMaker<Decision>::convert(d) << " for capacity " << capacity);
  REQUIRE(d.limit == capacity);
  REQUIRE(d.remaining >= 0);
  REQUIRE(d.remaining <= capacity);
  REQUIRE(d.reset_ms >= 0);
  if (d.allowed) {
    REQUIRE(d.retry_after_ms == 0);
  } else {
    REQUIRE((d.retry_after_ms == kNever || d.retry_after_ms > 0));
  }
}

}  // namespace

TEST_CASE("invalid rules are refused, naming the field", "[limiter]") {
  for (const Algorithm a : kAllAlgorithms) {
    expect_rejected({a, 0, 1000, 0}, 10, "limit");
    expect_rejected({a, -1, 1000, 0}, 10, "limit");
    expect_rejected({a, kMaxLimit + 1, 1000, 0}, 10, "limit");
    expect_rejected({a, 10, 0, 0}, 10, "window_ms");
    expect_rejected({a, 10, -1000, 0}, 10, "window_ms");
    expect_rejected({a, 10, kMaxWindowMs + 1, 0}, 10, "window_ms");
    expect_rejected({a, 10, 1000, -1}, 10, "burst");
    expect_rejected({a, 10, 1000, kMaxLimit + 1}, 10, "burst");
    expect_rejected({a, 10, 1000, 0}, 0, "key_capacity");
    if (!is_bucket(a)) expect_rejected({a, 10, 1000, 5}, 10, "burst");  // windows have no burst
  }
  expect_rejected({static_cast<Algorithm>(kAlgorithmCount), 10, 1000, 0}, 10, "algorithm");
  expect_rejected({static_cast<Algorithm>(255), 10, 1000, 0}, 10, "algorithm");
  // Products that would overflow the exact arithmetic.
  expect_rejected({Algorithm::kFixedWindow, kMaxLimit, kMaxWindowMs, 0}, 10, "window_ms");
  expect_rejected({Algorithm::kSlidingCounter, kMaxLimit, kMaxWindowMs, 0}, 10, "window_ms");
  expect_rejected({Algorithm::kSlidingLog, 10, (int64_t{1} << 31) + 1, 0}, 10, "window_ms");  // 32-bit offsets
  expect_rejected({Algorithm::kTokenBucket, 1, kMaxWindowMs, kMaxLimit}, 10, "burst");
  expect_rejected({Algorithm::kGcra, kMaxLimit - 1, 1, 0}, 10, "limit");  // TAT in 1/limit ms would overflow
}

TEST_CASE("valid rules are accepted up to the documented limits", "[limiter]") {
  Harness h;
  for (const Algorithm a : kAllAlgorithms) h.add(a, 1, 1);
  h.add(Algorithm::kFixedWindow, kMaxLimit, 1);
  h.add(Algorithm::kFixedWindow, 1, kMaxWindowMs);
  h.add(Algorithm::kSlidingLog, 3, int64_t{1} << 31);
  h.add(Algorithm::kTokenBucket, 1, 1, kMaxLimit);
  CHECK(h.limiter.rule_count() == std::size(kAllAlgorithms) + 4);
}

TEST_CASE("a limiter holds at most kMaxRules rules", "[limiter]") {
  Harness h;
  for (uint32_t i = 0; i < Limiter::kMaxRules; ++i) CHECK(h.add(Algorithm::kFixedWindow, 1, 1000, 0, 1) == i);
  uint32_t id = 0;
  CHECK(h.limiter.add_rule({Algorithm::kFixedWindow, 1, 1000, 0}, 1, &id, nullptr) == Status::kOutOfMemory);
  CHECK(h.limiter.rule_count() == Limiter::kMaxRules);
}

TEST_CASE("a table too large to allocate is refused with kOutOfMemory", "[limiter]") {
  Harness h;
  uint32_t id = 0;
  // A sliding log of 2^31 entries per key: 8 GB per slot.
  CHECK(h.limiter.add_rule({Algorithm::kSlidingLog, kMaxLimit, 1000, 0}, 1, &id, nullptr) == Status::kOutOfMemory);
  CHECK(h.limiter.add_rule({Algorithm::kFixedWindow, 5, 1000, 0}, 0xffffffff, &id, nullptr) == Status::kOutOfMemory);
  CHECK(h.limiter.rule_count() == 0);
  const uint32_t rule = h.add(Algorithm::kFixedWindow, 5, 1000);
  CHECK(h.check(rule, "k", 1, kNow).remaining == 4);
}

TEST_CASE("refused calls report the status and charge nothing", "[limiter]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kTokenBucket, 5, 1000);
  Decision per[kMaxChecksPerCall + 1];
  Outcome outcome;
  const std::string too_long(kMaxKeyBytes + 1, 'x');
  const auto status_of = [&](std::vector<Check> checks, int64_t now) {
    return h.limiter.check(checks.data(), static_cast<uint32_t>(checks.size()), now, per, &outcome);
  };
  CHECK(status_of({check_of(rule, "a", 1), check_of(rule, too_long, 1)}, kNow) == Status::kKeyTooLong);
  CHECK(status_of({check_of(rule, "a", 1), check_of(rule, "b", 0)}, kNow) == Status::kInvalidCost);
  CHECK(status_of({check_of(rule, "a", 1), check_of(rule, "b", -1)}, kNow) == Status::kInvalidCost);
  CHECK(status_of({check_of(rule, "a", 1), check_of(rule, "b", kMaxCost + 1)}, kNow) == Status::kInvalidCost);
  CHECK(status_of({check_of(rule, "a", 1), check_of(rule + 1, "b", 1)}, kNow) == Status::kUnknownRule);
  CHECK(status_of({check_of(rule, "a", 1)}, -1) == Status::kInvalidArgument);
  CHECK(status_of({check_of(rule, "a", 1)}, kMaxTimeMs + 1) == Status::kInvalidArgument);
  CHECK(status_of(std::vector<Check>(kMaxChecksPerCall + 1, check_of(rule, "a", 1)), kNow) == Status::kTooManyChecks);
  CHECK(h.limiter.check(nullptr, 1, kNow, per, &outcome) == Status::kInvalidArgument);
  const Check one = check_of(rule, "a", 1);
  CHECK(h.limiter.check(&one, 0, kNow, per, &outcome) == Status::kInvalidArgument);
  CHECK(h.limiter.check(&one, 1, kNow, nullptr, &outcome) == Status::kInvalidArgument);
  CHECK(h.limiter.check(&one, 1, kNow, per, nullptr) == Status::kInvalidArgument);
  CHECK_FALSE(h.exported(rule, "a").has_value());
  CHECK(h.stats(rule).keys == 0);
  // The extremes of time and cost themselves are valid.
  CHECK(status_of({check_of(rule, "a", kMaxCost)}, kMaxTimeMs) == Status::kOk);
  CHECK(status_of({check_of(rule, "a", 1)}, 0) == Status::kOk);
}

TEST_CASE("all or nothing: when one rule denies, no rule is charged", "[limiter]") {
  for (const Algorithm a : kAllAlgorithms) {
    INFO(name_of(a));
    Harness h;
    const uint32_t rule = h.add(a, 5, 1000);
    const uint32_t guard = h.add(Algorithm::kFixedWindow, 1, 60000);
    REQUIRE(h.check(guard, "ip", 1, kNow).allowed);
    REQUIRE(h.check(rule, "held", 2, kNow).allowed);
    const auto held_before = h.exported(rule, "held");
    const Decision peek_before = h.peek(rule, "held", 1, kNow + 10);

    const Check checks[3] = {check_of(rule, "held", 1), check_of(guard, "ip", 1), check_of(rule, "new", 1)};
    Decision per[3];
    Outcome outcome;
    REQUIRE(h.limiter.check(checks, 3, kNow + 10, per, &outcome) == Status::kOk);
    CHECK_FALSE(outcome.decision.allowed);
    CHECK(outcome.deciding_check == 1);
    CHECK(per[0].allowed);  // it would have admitted, and says how the key stands
    CHECK(per[0].remaining == 3);
    CHECK(per[2].remaining == 5);

    CHECK(h.exported(rule, "held") == held_before);
    CHECK(h.peek(rule, "held", 1, kNow + 10) == peek_before);
    CHECK_FALSE(h.exported(rule, "new").has_value());
    CHECK(h.stats(rule).keys == 1);
  }
}

TEST_CASE("the same rule and key twice in one call are one request of the summed cost", "[limiter]") {
  for (const Algorithm a : kAllAlgorithms) {
    INFO(name_of(a));
    Harness split;
    Harness whole;
    const uint32_t s = split.add(a, 7, 1000);
    const uint32_t w = whole.add(a, 7, 1000);
    const uint32_t other = split.add(Algorithm::kFixedWindow, 100, 1000);
    for (int64_t step = 0; step < 12; ++step) {
      const int64_t now = kNow + step * 150;
      const Check checks[3] = {check_of(s, "k", 2), check_of(other, "k", 1), check_of(s, "k", 3)};
      Decision per[3];
      Outcome outcome;
      REQUIRE(split.limiter.check(checks, 3, now, per, &outcome) == Status::kOk);
      const Decision single = whole.check(w, "k", 5, now);
      INFO("step " << step);
      CHECK(per[0] == single);
      CHECK(per[2] == single);
      CHECK(outcome.decision.allowed == single.allowed);
      CHECK(split.exported(s, "k") == whole.exported(w, "k"));
    }
  }
}

// Only 8 slots (one bucket): a call that holds all 8 and brings a 9th key cannot place it. It must fail
// whole, not after charging the 8.
TEST_CASE("a call whose new key finds no slot charges nothing", "[limiter]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kFixedWindow, 10, 60000, 0, 1);
  const uint32_t slots = h.stats(rule).slots;
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < slots; ++i) {
    keys.push_back("held-" + std::to_string(i));
    REQUIRE(h.check(rule, keys.back(), 1, kNow).allowed);
  }
  REQUIRE(h.stats(rule).keys == slots);
  keys.push_back("new");
  std::vector<Check> checks;
  for (const std::string& key : keys) checks.push_back(check_of(rule, key, 1));
  std::vector<Decision> per(checks.size());
  Outcome outcome;
  const Status status = h.limiter.check(checks.data(), static_cast<uint32_t>(checks.size()), kNow, per.data(), &outcome);
  if (status == Status::kOk) {
    CHECK(outcome.decision.allowed);
    for (uint32_t i = 0; i < slots; ++i) CHECK(h.peek(rule, keys[i], 1, kNow).remaining == 7);
  } else {
    CHECK(status == Status::kOutOfMemory);
    for (uint32_t i = 0; i < slots; ++i) {
      INFO(keys[i]);
      CHECK(h.peek(rule, keys[i], 1, kNow).remaining == 8);
    }
  }
}

TEST_CASE("export/import round trip: the state decides exactly as before, in another limiter and key", "[limiter][state]") {
  Random random(11);
  for (const Algorithm a : kAllAlgorithms) {
    for (int round = 0; round < 60; ++round) {
      const int64_t limit = random.between(1, 9);
      const int64_t window_ms = random.between(1, 3000);
      const int64_t burst = is_bucket(a) && random.percent(50) ? random.between(1, 15) : 0;
      INFO(name_of(a) << " limit " << limit << " window_ms " << window_ms << " burst " << burst << " round " << round);
      Harness here;
      Harness there(SipHashKey{7, 8});  // another seed, as another isolate would have
      const uint32_t r1 = here.add(a, limit, window_ms, burst);
      const uint32_t r2 = there.add(a, limit, window_ms, burst);
      int64_t now = random.between(0, 1'000'000'000'000);
      for (int step = 0; step < 40; ++step) {
        now = std::max<int64_t>(0, now + random.between(-window_ms / 4, window_ms / 2));
        const int64_t cost = random.between(1, limit + 1);
        const Decision d1 = here.check(r1, "a", cost, now);
        const Decision d2 = there.check(r2, "b", cost, now);
        INFO("step " << step << " now " << now << " cost " << cost);
        REQUIRE(d1 == d2);
        if (random.percent(30)) {
          // Move the state one way or the other, as a Durable Object or KV round trip would.
          const bool forth = random.percent(50);
          Harness& from = forth ? here : there;
          Harness& to = forth ? there : here;
          const auto bytes = from.exported(forth ? r1 : r2, forth ? "a" : "b");
          if (!bytes) {
            // Only denied requests so far: neither side remembers the key.
            REQUIRE_FALSE(to.exported(forth ? r2 : r1, forth ? "b" : "a").has_value());
            continue;
          }
          REQUIRE(to.import(forth ? r2 : r1, forth ? "b" : "a", *bytes) == Status::kOk);
          REQUIRE(to.exported(forth ? r2 : r1, forth ? "b" : "a") == bytes);
        }
      }
    }
  }
}

TEST_CASE("state bytes from a rule with other parameters are refused", "[limiter][state]") {
  const std::vector<RuleConfig> configs = {
      {Algorithm::kFixedWindow, 5, 1000, 0},    {Algorithm::kFixedWindow, 6, 1000, 0},
      {Algorithm::kFixedWindow, 5, 1001, 0},    {Algorithm::kSlidingLog, 5, 1000, 0},
      {Algorithm::kSlidingLog, 4, 1000, 0},     {Algorithm::kSlidingCounter, 5, 1000, 0},
      {Algorithm::kSlidingCounter, 5, 999, 0},  {Algorithm::kTokenBucket, 5, 1000, 0},
      {Algorithm::kTokenBucket, 5, 1000, 6},    {Algorithm::kTokenBucket, 10, 2000, 5},
      {Algorithm::kLeakyBucket, 5, 1000, 0},    {Algorithm::kLeakyBucket, 5, 1000, 6},
      {Algorithm::kGcra, 5, 1000, 0},           {Algorithm::kGcra, 5, 1000, 2},
  };
  Harness h;
  std::vector<std::vector<uint8_t>> exports;
  for (const RuleConfig& c : configs) {
    const uint32_t rule = h.add(c.algorithm, c.limit, c.window_ms, c.burst);
    REQUIRE(h.check(rule, "k", 1, kNow).allowed);
    REQUIRE(h.check(rule, "k", 1, kNow + 10).allowed);
    exports.push_back(*h.exported(rule, "k"));
  }
  for (uint32_t from = 0; from < configs.size(); ++from) {
    for (uint32_t to = 0; to < configs.size(); ++to) {
      INFO("bytes of rule " << from << " into rule " << to);
      CHECK(h.import(to, "other", exports[from]) == (from == to ? Status::kOk : Status::kInvalidState));
    }
  }
}

TEST_CASE("truncated, extended, garbage and corrupted state bytes are refused or harmless, never a crash",
          "[limiter][state]") {
  Random random(12);
  for (const Algorithm a : kAllAlgorithms) {
    INFO(name_of(a));
    Harness h;
    const uint32_t rule = h.add(a, 5, 1000);
    const int64_t capacity = 5;
    REQUIRE(h.check(rule, "k", 2, kNow).allowed);
    REQUIRE(h.check(rule, "k", 1, kNow + 300).allowed);
    const std::vector<uint8_t> good = *h.exported(rule, "k");

    for (size_t length = 0; length < good.size(); ++length) {
      INFO("truncated to " << length);
      CHECK(h.import(rule, "t", std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(length))) ==
            Status::kInvalidState);
    }
    std::vector<uint8_t> extended = good;
    extended.push_back(0);
    CHECK(h.import(rule, "t", extended) == Status::kInvalidState);
    CHECK(h.limiter.import_state(rule, bytes_of("t"), 1, nullptr, 24) == Status::kInvalidState);
    for (int i = 0; i < 200; ++i) {
      std::vector<uint8_t> garbage(static_cast<size_t>(random.between(0, 64)));
      for (uint8_t& byte : garbage) byte = static_cast<uint8_t>(random.next());
      CHECK(h.import(rule, "t", garbage) == Status::kInvalidState);
    }
    CHECK_FALSE(h.exported(rule, "t").has_value());

    // Valid header, corrupted body: refused, or else a state that decides sanely at any time.
    const auto exercise = [&](const std::vector<uint8_t>& bytes) {
      const Status status = h.import(rule, "c", bytes);
      REQUIRE((status == Status::kOk || status == Status::kInvalidState));
      if (status != Status::kOk) return;
      for (const int64_t now : {int64_t{0}, kNow - 5000, kNow, kNow + 400, kNow + 5000, kMaxTimeMs}) {
        for (const int64_t cost : {int64_t{1}, capacity, capacity + 1}) {
          require_sane(h.peek(rule, "c", cost, now), capacity);
          const auto before = h.exported(rule, "c");
          const Decision d = h.check(rule, "c", cost, now);
          require_sane(d, capacity);
          if (!d.allowed) REQUIRE(h.exported(rule, "c") == before);
        }
      }
    };
    for (size_t bit = 0; bit < good.size() * 8; ++bit) {
      std::vector<uint8_t> flipped = good;
      flipped[bit / 8] = static_cast<uint8_t>(flipped[bit / 8] ^ (1u << (bit % 8)));
      INFO("bit " << bit << " flipped");
      exercise(flipped);
    }
    for (int i = 0; i < 300; ++i) {
      std::vector<uint8_t> words = good;
      for (size_t at = 8; at + 8 <= words.size(); at += 8) {
        const int choice = static_cast<int>(random.between(0, 3));
        const int64_t value = choice == 0   ? static_cast<int64_t>(random.next())
                              : choice == 1 ? random.between(0, 64)
                              : choice == 2 ? random.between(0, kMaxTimeMs * 4)
                                            : read_i64(good, at) + random.between(-3, 3);
        write_i64(words, at, value);
      }
      INFO("words " << read_i64(words, 8) << ", " << read_i64(words, 16));
      exercise(words);
    }
  }
}

TEST_CASE("the sliding log rebases its 32-bit offsets when a key stays busy for 2^31 ms", "[limiter][state]") {
  constexpr int64_t kW = int64_t{1} << 31;
  Harness h;
  const uint32_t rule = h.add(Algorithm::kSlidingLog, 3, kW);
  CHECK(h.check(rule, "k", 1, 0) == Decision{true, 3, 2, kW, 0});
  CHECK(h.check(rule, "k", 1, kW - 1) == Decision{true, 3, 1, kW, 0});
  // The entry at 0 leaves; the one at 2^31 - 1 stays, and the new one is 2^31 + 5 after the old base.
  CHECK(h.check(rule, "k", 1, kW + 5) == Decision{true, 3, 1, kW, 0});
  CHECK(h.check(rule, "k", 2, 2 * kW - 2) == Decision{false, 3, 1, 7, 1});
  CHECK(h.check(rule, "k", 2, 2 * kW - 1) == Decision{true, 3, 0, kW, 0});
  const auto bytes = h.exported(rule, "k");
  REQUIRE(bytes.has_value());
  REQUIRE(bytes->size() == 24 + 3 * 8);
  CHECK(read_i64(*bytes, 24) == kW + 5);
  CHECK(read_i64(*bytes, 32) == 2 * kW - 1);
  CHECK(read_i64(*bytes, 40) == 2 * kW - 1);
}

// The largest parameters each algorithm accepts, driven to the extremes of time and cost: every product
// the exact arithmetic forms must fit in 64 bits (UBSan, in the sanitizer build, traps any overflow).
TEST_CASE("the largest accepted rules, at the extremes of time and cost, decide sanely", "[limiter][extremes]") {
  // The largest x in [1, high] for which accepts(x) holds (accepts must be monotonic; false when none).
  const auto largest = [](int64_t high, auto accepts) -> std::optional<int64_t> {
    if (!accepts(1)) return std::nullopt;
    int64_t low = 1;
    while (low < high) {
      const int64_t mid = low + (high - low + 1) / 2;
      if (accepts(mid)) {
        low = mid;
      } else {
        high = mid - 1;
      }
    }
    return low;
  };
  const auto accepted = [](RuleConfig c) {
    Limiter limiter(kTestSeed);
    uint32_t id = 0;
    return limiter.add_rule(c, 1, &id, nullptr) == Status::kOk;
  };
  std::vector<RuleConfig> rules;
  for (const Algorithm a : kAllAlgorithms) {
    const int64_t max_window = a == Algorithm::kSlidingLog ? int64_t{1} << 31 : kMaxWindowMs;
    const int64_t max_limit = a == Algorithm::kSlidingLog ? 3 : kMaxLimit;  // the log's ring is limit entries
    for (const int64_t limit : {int64_t{1}, int64_t{3}, int64_t{1} << 20, kMaxLimit - 1, kMaxLimit}) {
      if (limit > max_limit) continue;
      const auto window = largest(max_window, [&](int64_t w) { return accepted({a, limit, w, 0}); });
      if (!window) continue;
      for (const int64_t w : {*window, *window - 1, int64_t{1}}) {
        if (w < 1) continue;
        rules.push_back({a, limit, w, 0});
        if (!is_bucket(a)) continue;
        const auto burst = largest(kMaxLimit, [&](int64_t b) { return accepted({a, limit, w, b}); });
        if (burst) rules.push_back({a, limit, w, *burst});
      }
    }
  }
  REQUIRE(rules.size() > 20);
  for (const RuleConfig& c : rules) {
    INFO(name_of(c.algorithm) << " limit " << c.limit << " window_ms " << c.window_ms << " burst " << c.burst);
    Harness h;
    const uint32_t rule = h.add(c.algorithm, c.limit, c.window_ms, c.burst, 8);
    const int64_t capacity = is_bucket(c.algorithm) && c.burst != 0 ? c.burst : c.limit;
    const int64_t big = std::min(capacity, kMaxCost);
    const int64_t times[] = {0, 0, 1, c.window_ms - 1, c.window_ms, c.window_ms + 1, kMaxTimeMs / 2, kMaxTimeMs - 1,
                             kMaxTimeMs, 0, kMaxTimeMs - c.window_ms, kMaxTimeMs};
    for (const int64_t now : times) {
      if (now < 0 || now > kMaxTimeMs) continue;
      for (const int64_t cost : {big, int64_t{1}, big, std::min(capacity + 1, kMaxCost), kMaxCost}) {
        INFO("now " << now << " cost " << cost);
        require_sane(h.peek(rule, "k", cost, now), capacity);
        require_sane(h.check(rule, "k", cost, now), capacity);
      }
      // Sixteen checks of the largest cost on one key: one request of 2^35.
      std::vector<Check> checks(kMaxChecksPerCall, check_of(rule, "k", kMaxCost));
      Decision per[kMaxChecksPerCall];
      Outcome outcome;
      REQUIRE(h.limiter.check(checks.data(), kMaxChecksPerCall, now, per, &outcome) == Status::kOk);
      require_sane(outcome.decision, capacity);
      // The state at its extreme survives a round trip.
      const auto bytes = h.exported(rule, "k");
      if (bytes) CHECK(h.import(rule, "copy", *bytes) == Status::kOk);
    }
  }
}
