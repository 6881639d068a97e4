// Leases (Limiter::lend / give_back): what is lent is charged when lent, so that everything lent plus
// everything admitted directly never exceeds the rule; unused units given back are admitted again.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sluice/limiter.hpp"
#include "support.hpp"

using namespace sluice;

namespace {

uint64_t hash_of(const Limiter& limiter, const std::string& key) {
  return limiter.key_hash(reinterpret_cast<const uint8_t*>(key.data()), static_cast<uint32_t>(key.size()));
}

uint32_t add(Limiter& limiter, Algorithm algorithm, int64_t limit, int64_t window_ms) {
  RuleConfig config;
  config.algorithm = algorithm;
  config.limit = limit;
  config.window_ms = window_ms;
  uint32_t id = 0;
  REQUIRE(limiter.add_rule(config, 64, &id, nullptr) == Status::kOk);
  return id;
}

Decision check(Limiter& limiter, uint32_t rule, uint64_t hash, int64_t now) {
  Decision d;
  REQUIRE(limiter.check_one(rule, hash, 1, now, true, &d) == Status::kOk);
  return d;
}

}  // namespace

TEST_CASE("a fixed window lends a quarter of what is left, until the window ends") {
  Limiter limiter(SipHashKey{1, 2});
  const uint32_t rule = add(limiter, Algorithm::kFixedWindow, 100, 60'000);
  const uint64_t key = hash_of(limiter, "k");
  Lease lease;
  // t0 = 30 s into window 0: a 60 s lease is cut at the window's end.
  REQUIRE(limiter.lend(rule, key, 50, 60'000, 30'000, &lease) == Status::kOk);
  CHECK(lease.units == 25);
  CHECK(lease.expires_at_ms == 60'000);
  CHECK(lease.remaining == 75);
  REQUIRE(limiter.lend(rule, key, 5, 10'000, 31'000, &lease) == Status::kOk);
  CHECK(lease.units == 5);
  CHECK(lease.expires_at_ms == 41'000);
  CHECK(check(limiter, rule, key, 32'000).remaining == 69);
  // Given back in the same window: admitted again.
  int64_t returned = -1;
  REQUIRE(limiter.give_back(rule, key, 10, 60'000, &returned) == Status::kOk);
  CHECK(returned == 10);
  CHECK(check(limiter, rule, key, 33'000).remaining == 78);
  // In the next window the lent units lapsed with their window: nothing to give back.
  check(limiter, rule, key, 61'000);
  REQUIRE(limiter.give_back(rule, key, 5, 41'000, &returned) == Status::kOk);
  CHECK(returned == 0);
  CHECK(check(limiter, rule, key, 62'000).remaining == 98);
}

TEST_CASE("nothing is lent near the limit, nor when time ran backwards, nor by algorithms that cannot lend") {
  Limiter limiter(SipHashKey{1, 2});
  const uint32_t rule = add(limiter, Algorithm::kFixedWindow, 10, 1'000);
  const uint64_t key = hash_of(limiter, "k");
  for (int i = 0; i < 7; ++i) check(limiter, rule, key, 100);
  Lease lease;
  REQUIRE(limiter.lend(rule, key, 100, 500, 100, &lease) == Status::kOk);
  CHECK(lease.units == 0);  // 3 left: below kLendShare
  CHECK(lease.remaining == 3);
  check(limiter, rule, key, 2'500);  // the key is in window 2
  REQUIRE(limiter.lend(rule, key, 100, 500, 1'500, &lease) == Status::kOk);  // now is in window 1
  CHECK(lease.units == 0);
  for (const Algorithm algorithm : {Algorithm::kSlidingLog, Algorithm::kTokenBucket, Algorithm::kLeakyBucket, Algorithm::kGcra}) {
    const uint32_t other = add(limiter, algorithm, 10, 1'000);
    CHECK(limiter.lend(other, key, 1, 500, 100, &lease) == Status::kInvalidArgument);
    int64_t returned = 0;
    CHECK(limiter.give_back(other, key, 1, 600, &returned) == Status::kInvalidArgument);
  }
  CHECK(limiter.lend(rule, key, 1, 0, 100, &lease) == Status::kInvalidArgument);
}

TEST_CASE("the sliding-window counter lends within the current window and takes back only from it") {
  Limiter limiter(SipHashKey{1, 2});
  const uint32_t rule = add(limiter, Algorithm::kSlidingCounter, 40, 1'000);
  const uint64_t key = hash_of(limiter, "k");
  Lease lease;
  REQUIRE(limiter.lend(rule, key, 100, 5'000, 200, &lease) == Status::kOk);
  CHECK(lease.units == 10);
  CHECK(lease.expires_at_ms == 1'000);
  int64_t returned = 0;
  REQUIRE(limiter.give_back(rule, key, 4, lease.expires_at_ms, &returned) == Status::kOk);
  CHECK(returned == 4);
  // 6 charged in window 0; at 1 500 they weigh half: 3 used of 40.
  Decision d;
  REQUIRE(limiter.check_one(rule, key, 1, 1'500, false, &d) == Status::kOk);
  CHECK(d.remaining == 36);
}

// Several isolates share one key: each decides from its lease while it lasts and otherwise asks the
// object (a direct check, then a lease). In every window, direct and leased admissions together stay
// within the limit; leases are given back at random.
TEST_CASE("direct and leased admissions never exceed the limit in any window") {
  for (const Algorithm algorithm : {Algorithm::kFixedWindow, Algorithm::kSlidingCounter}) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      test::Random random(seed);
      Limiter limiter(SipHashKey{seed, 7});
      const int64_t limit = 1 + static_cast<int64_t>(random.next() % 200);
      const int64_t window_ms = 100 + static_cast<int64_t>(random.next() % 1'000);
      const uint32_t rule = add(limiter, algorithm, limit, window_ms);
      const uint64_t key = hash_of(limiter, "shared");
      struct Held {
        int64_t units = 0;
        int64_t expires_at_ms = 0;
      };
      std::vector<Held> isolates(4);
      std::map<int64_t, int64_t> admitted_per_window;
      int64_t now = static_cast<int64_t>(random.next() % 10'000);
      for (int step = 0; step < 3'000; ++step) {
        now += static_cast<int64_t>(random.next() % 7);
        Held& held = isolates[random.next() % isolates.size()];
        if (random.next() % 50 == 0 && held.units > 0) {
          int64_t returned = 0;
          REQUIRE(limiter.give_back(rule, key, held.units, held.expires_at_ms, &returned) == Status::kOk);
          REQUIRE(returned <= held.units);
          held.units = 0;
          continue;
        }
        if (held.units > 0 && now < held.expires_at_ms) {
          --held.units;
          ++admitted_per_window[now / window_ms];
          continue;
        }
        held.units = 0;  // expired: stranded until its window ends
        if (check(limiter, rule, key, now).allowed) ++admitted_per_window[now / window_ms];
        Lease lease;
        REQUIRE(limiter.lend(rule, key, static_cast<int64_t>(random.next() % 64), 1 + static_cast<int64_t>(random.next() % 2'000), now, &lease) == Status::kOk);
        held.units = lease.units;
        held.expires_at_ms = lease.expires_at_ms;
        REQUIRE((lease.units == 0 || lease.expires_at_ms <= (now / window_ms + 1) * window_ms));
      }
      for (const auto& [window, admitted] : admitted_per_window) {
        INFO("seed " << seed << " window " << window << " limit " << limit);
        REQUIRE(admitted <= limit);
      }
    }
  }
}
