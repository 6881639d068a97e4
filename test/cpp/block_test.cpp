// Block durations (sluice/block.hpp): a key that exceeds a blocking rule is denied everything until its
// block ends, Retry-After says exactly when, and it then starts at its full quota.
#include <string>

#include "support.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

constexpr int64_t kT0 = 1'700'000'000'000;

}  // namespace

TEST_CASE("a key that exceeds a blocking rule is denied everything until the block ends, then starts afresh", "[block]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    // 3 per second, blocked for 10 s: far longer than the algorithm itself would hold the key.
    const uint32_t rule = h.add(algorithm, 3, 1000, 0, 100, 10'000);
    for (int i = 0; i < 3; ++i) REQUIRE(h.check(rule, "attacker", 1, kT0).allowed);
    const Decision exceeded = h.check(rule, "attacker", 1, kT0);
    REQUIRE_FALSE(exceeded.allowed);
    CHECK(exceeded.retry_after_ms == 10'000);
    CHECK(exceeded.reset_ms == 10'000);
    CHECK(exceeded.remaining == 0);
    // Throughout the block, whatever the window says (it turned nine times), every request is denied and
    // told the same end.
    for (int64_t at = kT0 + 1; at < kT0 + 10'000; at += 997) {
      const Decision d = h.check(rule, "attacker", 1, at);
      REQUIRE_FALSE(d.allowed);
      REQUIRE(d.retry_after_ms == kT0 + 10'000 - at);
    }
    const Decision last_ms = h.check(rule, "attacker", 1, kT0 + 9'999);
    CHECK_FALSE(last_ms.allowed);
    CHECK(last_ms.retry_after_ms == 1);
    // Denials during the block do not extend it; at its end the key is at its full quota.
    const Decision after = h.check(rule, "attacker", 1, kT0 + 10'000);
    CHECK(after.allowed);
    CHECK(after.remaining == 2);
    // Another key was never touched by it.
    CHECK(h.check(rule, "bystander", 1, kT0 + 1).remaining == 2);
  }
}

TEST_CASE("throttling stays the default: without block_ms only the excess is denied", "[block]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kFixedWindow, 3, 1000);
  for (int i = 0; i < 3; ++i) REQUIRE(h.check(rule, "k", 1, kT0).allowed);
  const Decision denied = h.check(rule, "k", 1, kT0 + 10);
  CHECK_FALSE(denied.allowed);
  CHECK(denied.retry_after_ms == 990);
  CHECK(h.check(rule, "k", 1, kT0 + 1000).allowed);
}

TEST_CASE("a block never ends before the key's quota would be whole again, so it never admits more than throttling", "[block]") {
  // A 1 s block on a 60 s fixed window: starting afresh after 1 s would hand out a second quota inside
  // the window, so the block lasts until the window turns.
  Harness h;
  const uint32_t rule = h.add(Algorithm::kFixedWindow, 2, 60'000, 0, 100, 1'000);
  const int64_t start = int64_t{60'000} * 28'333'333;  // a window's start
  REQUIRE(h.check(rule, "k", 1, start).allowed);
  REQUIRE(h.check(rule, "k", 1, start).allowed);
  const Decision exceeded = h.check(rule, "k", 1, start + 5'000);
  CHECK_FALSE(exceeded.allowed);
  CHECK(exceeded.retry_after_ms == 55'000);
  CHECK_FALSE(h.check(rule, "k", 1, start + 6'000).allowed);
  CHECK(h.check(rule, "k", 1, start + 60'000).allowed);

  // The same property over random streams, for every algorithm: a blocking rule admits nothing that the
  // same rule without blocks, charged with the same admissions, would deny.
  Random random(22);
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    for (int round = 0; round < 40; ++round) {
      Harness blocking;
      Harness throttling;
      const int64_t limit = random.between(1, 6);
      const int64_t window = random.between(10, 2'000);
      const int64_t block = random.between(1, 3 * window);
      const uint32_t b = blocking.add(algorithm, limit, window, 0, 100, block);
      const uint32_t t = throttling.add(algorithm, limit, window);
      int64_t now = kT0;
      for (int step = 0; step < 300; ++step) {
        now += random.between(0, window / 2);
        const int64_t cost = random.between(1, limit);
        const Decision d = blocking.check(b, "k", cost, now);
        if (!d.allowed) continue;
        INFO("round " << round << " step " << step << " limit " << limit << " window " << window << " block " << block);
        REQUIRE(throttling.check(t, "k", cost, now).allowed);
      }
    }
  }
}

TEST_CASE("a block's Retry-After tells the truth: denied 1 ms before it, admitted at it", "[block]") {
  Random random(2022);
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    for (int round = 0; round < 30; ++round) {
      Harness h;
      const int64_t limit = random.between(1, 5);
      const int64_t window = random.between(5, 3'000);
      const uint32_t rule = h.add(algorithm, limit, window, 0, 100, random.between(1, 2 * window));
      int64_t now = kT0;
      for (int step = 0; step < 200; ++step) {
        now += random.between(0, window);
        const int64_t cost = random.between(1, limit);
        const Decision d = h.check(rule, "k", cost, now);
        if (d.allowed) continue;
        REQUIRE(d.retry_after_ms > 0);
        REQUIRE_FALSE(h.peek(rule, "k", 1, now + d.retry_after_ms - 1).allowed);
        REQUIRE(h.peek(rule, "k", cost, now + d.retry_after_ms).allowed);
      }
    }
  }
}

TEST_CASE("a request that no wait can admit does not block the key", "[block]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kTokenBucket, 5, 1000, 0, 100, 60'000);
  const Decision too_big = h.check(rule, "k", 6, kT0);
  CHECK_FALSE(too_big.allowed);
  CHECK(too_big.retry_after_ms == kNever);
  CHECK(h.check(rule, "k", 1, kT0).allowed);
}

TEST_CASE("peek reports the block a check would start, and starts none", "[block]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kSlidingLog, 1, 1000, 0, 100, 30'000);
  REQUIRE(h.check(rule, "k", 1, kT0).allowed);
  const Decision peeked = h.peek(rule, "k", 1, kT0 + 1);
  CHECK_FALSE(peeked.allowed);
  CHECK(peeked.retry_after_ms == 30'000);
  // The peek blocked nothing: the log admits again once its entry leaves the window.
  CHECK(h.peek(rule, "k", 1, kT0 + 1000).allowed);
  CHECK(h.check(rule, "k", 1, kT0 + 1) == peeked);
  CHECK_FALSE(h.peek(rule, "k", 1, kT0 + 1000).allowed);
}

TEST_CASE("a blocking rule's denial in a multi-check blocks its key, and rules that admitted are not charged", "[block]") {
  Harness h;
  const uint32_t per_ip = h.add(Algorithm::kFixedWindow, 1, 1000, 0, 100, 5'000);
  const uint32_t per_user = h.add(Algorithm::kTokenBucket, 10, 1000);
  Decision per[2];
  Outcome outcome;
  const Check first[2] = {check_of(per_ip, "ip", 1), check_of(per_user, "user", 1)};
  REQUIRE(h.limiter.check(first, 2, kT0, per, &outcome) == Status::kOk);
  REQUIRE(outcome.decision.allowed);
  REQUIRE(h.limiter.check(first, 2, kT0 + 1, per, &outcome) == Status::kOk);
  CHECK_FALSE(outcome.decision.allowed);
  CHECK(outcome.decision.retry_after_ms == 5'000);
  CHECK(h.peek(per_user, "user", 1, kT0 + 1).remaining == 8);  // charged once, by the first call
  CHECK_FALSE(h.peek(per_ip, "ip", 1, kT0 + 4'999).allowed);  // the window turned; the block holds
  CHECK(h.peek(per_ip, "ip", 1, kT0 + 5'001).allowed);
}

TEST_CASE("a blocked key's state bytes carry the block to another limiter, and only to a rule with the same block", "[block]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness here;
    Harness there;
    Harness other_block;
    const uint32_t a = here.add(algorithm, 2, 1000, 0, 100, 7'000);
    const uint32_t b = there.add(algorithm, 2, 1000, 0, 100, 7'000);
    const uint32_t c = other_block.add(algorithm, 2, 1000, 0, 100, 8'000);
    for (int i = 0; i < 3; ++i) here.check(a, "k", 1, kT0);
    const auto bytes = here.exported(a, "k");
    REQUIRE(bytes.has_value());
    CHECK(read_i64(*bytes, 8) == ~(kT0 + 7'000));  // the blocked form: a = ~until, b = 0
    CHECK(read_i64(*bytes, 16) == 0);
    CHECK(bytes->size() == Limiter::kStateHeaderBytes);
    REQUIRE(there.import(b, "k", *bytes) == Status::kOk);
    CHECK(there.peek(b, "k", 1, kT0 + 6'999).retry_after_ms == 1);
    CHECK(there.peek(b, "k", 1, kT0 + 7'000).allowed);
    CHECK(other_block.import(c, "k", *bytes) == Status::kInvalidState);
    // A blocked form whose end is past what a decision can report exactly is refused.
    std::vector<uint8_t> far = *bytes;
    write_i64(far, 8, ~(kMaxExactInteger + 1));
    CHECK(there.import(b, "k2", far) == Status::kInvalidState);
    std::vector<uint8_t> with_count = *bytes;
    write_i64(with_count, 16, 1);
    CHECK(there.import(b, "k3", with_count) == Status::kInvalidState);
  }
}

TEST_CASE("eviction never lifts a block: a flood of keys cannot free a blocked key", "[block]") {
  for (const Algorithm algorithm : kAllAlgorithms) {
    INFO(name_of(algorithm));
    Harness h;
    const uint32_t rule = h.add(algorithm, 1, 100, 0, 16, 60'000);
    REQUIRE(h.check(rule, "attacker", 1, kT0).allowed);
    REQUIRE_FALSE(h.check(rule, "attacker", 1, kT0).allowed);
    // 1,600 keys (100 x the table, 4 x what it may grow to), each spending its quota inside one 100 ms
    // window, evict the attacker many times over.
    for (int i = 0; i < 1600; ++i) h.check(rule, "flood-" + std::to_string(i), 1, kT0 + 1 + i / 20);
    REQUIRE(h.stats(rule).evictions_restricting > 0);
    const Decision d = h.check(rule, "attacker", 1, kT0 + 2'000);
    CHECK_FALSE(d.allowed);
    CHECK(d.retry_after_ms >= kT0 + 60'000 - (kT0 + 2'000));
  }
}

TEST_CASE("reset lifts a block", "[block]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kGcra, 1, 1000, 0, 100, 60'000);
  h.check(rule, "k", 1, kT0);
  REQUIRE_FALSE(h.check(rule, "k", 1, kT0).allowed);
  REQUIRE(h.limiter.reset(rule, bytes_of("k"), 1) == Status::kOk);
  CHECK(h.check(rule, "k", 1, kT0 + 1).allowed);
}

TEST_CASE("block_ms is refused, naming it, when negative, too long, on a concurrency rule or with count_denied", "[block]") {
  Limiter limiter(kTestSeed);
  uint32_t id = 0;
  const auto refused_field = [&](RuleConfig config) {
    const char* field = nullptr;
    const Status status = limiter.add_rule(config, 10, &id, &field);
    return status == Status::kInvalidRule && field != nullptr ? std::string(field) : std::string("(accepted)");
  };
  RuleConfig negative{Algorithm::kFixedWindow, 5, 1000};
  negative.block_ms = -1;
  CHECK(refused_field(negative) == "block_ms");
  RuleConfig too_long{Algorithm::kFixedWindow, 5, 1000};
  too_long.block_ms = kMaxWindowMs + 1;
  CHECK(refused_field(too_long) == "block_ms");
  RuleConfig concurrency{Algorithm::kConcurrency, 5, 1000};
  concurrency.block_ms = 1000;
  CHECK(refused_field(concurrency) == "block_ms");
  RuleConfig counting{Algorithm::kSlidingCounter, 5, 1000};
  counting.count_denied = true;
  counting.block_ms = 1000;
  CHECK(refused_field(counting) == "block_ms");
}

TEST_CASE("a blocking rule does not lend", "[block]") {
  Harness h;
  const uint32_t rule = h.add(Algorithm::kFixedWindow, 100, 1000, 0, 100, 1000);
  Lease lease;
  CHECK(h.limiter.lend(rule, h.limiter.key_hash(bytes_of("k"), 1), 10, 500, kT0, &lease) == Status::kInvalidArgument);
}
